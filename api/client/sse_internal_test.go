package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// readAll returns every event of an SSE input, and the error that ended it.
func readAllSSE(r io.Reader, max int) ([]wireEvent, error) {
	p := newSSEReader(bufio.NewReaderSize(r, 16), max)
	var out []wireEvent
	for {
		ev, err := p.next()
		if err != nil {
			return out, err
		}
		ev.data = slices.Clone(ev.data)
		out = append(out, ev)
	}
}

func fmtEvents(evs []wireEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "{%s id=%q data=%q}", ev.name, ev.id, ev.data)
	}
	return b.String()
}

// TestSSEParsingRules checks the rules of WHATWG HTML, "Interpreting an event stream",
// one input each.
func TestSSEParsingRules(t *testing.T) {
	cases := []struct {
		name, in, want string
		err            error
	}{
		{"a message", "data: a\n\n", `{message id="" data="a"}`, io.EOF},
		{"named event", "event: batch\ndata: a\n\n", `{batch id="" data="a"}`, io.EOF},
		{"CRLF", "event: x\r\ndata: a\r\n\r\n", `{x id="" data="a"}`, io.EOF},
		{"CR", "event: x\rdata: a\r\r", `{x id="" data="a"}`, io.EOF},
		{"mixed ends", "data: a\r\ndata: b\rdata: c\n\r\n", `{message id="" data="a\nb\nc"}`, io.EOF},
		{"leading BOM dropped once", "\uFEFFdata: a\n\n\uFEFFdata: b\n\n", `{message id="" data="a"}`, io.EOF},
		{"comments", ": hi\n:\ndata: a\n: mid\n\n", `{message id="" data="a"}`, io.EOF},
		{"field without colon", "data\n\n", `{message id="" data=""}`, io.EOF},
		{"one space dropped", "data:a\n\ndata:  b\n\n", `{message id="" data="a"}{message id="" data=" b"}`, io.EOF},
		{"data lines joined", "data: a\ndata:\ndata: b\n\n", `{message id="" data="a\n\nb"}`, io.EOF},
		{"id persists", "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", `{message id="1" data="a"}{message id="1" data="b"}{message id="" data="c"}`, io.EOF},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", `{message id="1" data="a"}{message id="1" data="b"}`, io.EOF},
		{"no data, no dispatch; type reset", "event: x\nid: 7\n\ndata: a\n\n", `{message id="7" data="a"}`, io.EOF},
		{"unknown fields ignored", "foo: bar\ndata: a\nevent\n\n", `{message id="" data="a"}`, io.EOF},
		{"truncated event discarded", "data: a\n\ndata: b\n", `{message id="" data="a"}`, io.ErrUnexpectedEOF},
		{"truncated line discarded", "data: a\n\ndata: b", `{message id="" data="a"}`, io.ErrUnexpectedEOF},
		{"too large", "data: a\n\ndata: " + strings.Repeat("x", 40) + "\ndata: " + strings.Repeat("x", 40) + "\n\n", `{message id="" data="a"}`, ErrEventTooLarge},
	}
	for _, tc := range cases {
		got, err := readAllSSE(strings.NewReader(tc.in), 64)
		if fmtEvents(got) != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: got %s, %v; want %s, %v", tc.name, fmtEvents(got), err, tc.want, tc.err)
		}
	}
}

func TestSSERetryField(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"retry: 1500\n\n", 1500 * time.Millisecond, true},
		{"retry: 1500\nretry: 15x0\n\n", 1500 * time.Millisecond, true},
		{"retry:\n\n", 0, false},
		{"retry: -5\n\n", 0, false},
		{"retry: 99999999999999999999999\n\n", time.Hour, true},
	} {
		p := newSSEReader(bufio.NewReader(strings.NewReader(tc.in)), 1<<10)
		p.next()
		if d, ok := p.reconnectionTime(); d != tc.want || ok != tc.ok {
			t.Errorf("%q: reconnection time %v %v, want %v %v", tc.in, d, ok, tc.want, tc.ok)
		}
	}
}

// serverLike is what ducktail writes: a comment and retry field, then events.
const serverLike = ": ducktail stream\nretry: 2000\n\n" +
	"event: schema\nid: r1.AAAA\ndata: c2NoZW1h\n\n" +
	"event: batch\nid: r1.BBBB\ndata: YmF0Y2g=\n\n" +
	"event: heartbeat\ndata:\n\n" +
	"event: reconnect\ndata: {\"reason\":\"server_draining\",\"retry_ms\":2500}\n\n"

// TestSSEAnySplitAnyLineEnd reads the same events whatever the line ends and wherever
// the input is split: one byte at a time, and in two reads split at every offset (a CR
// and its LF in different reads included).
func TestSSEAnySplitAnyLineEnd(t *testing.T) {
	want, err := readAllSSE(strings.NewReader(serverLike), 1<<10)
	if err != io.EOF || len(want) != 4 {
		t.Fatalf("%s, %v", fmtEvents(want), err)
	}
	for _, end := range []string{"\n", "\r\n", "\r"} {
		in := strings.ReplaceAll(serverLike, "\n", end)
		got, err := readAllSSE(iotest.OneByteReader(strings.NewReader(in)), 1<<10)
		if fmtEvents(got) != fmtEvents(want) || err != io.EOF {
			t.Fatalf("%q one byte at a time: %s, %v", end, fmtEvents(got), err)
		}
		for i := range len(in) {
			got, err := readAllSSE(io.MultiReader(strings.NewReader(in[:i]), strings.NewReader(in[i:])), 1<<10)
			if fmtEvents(got) != fmtEvents(want) || err != io.EOF {
				t.Fatalf("%q split at %d: %s, %v", end, i, fmtEvents(got), err)
			}
		}
	}
}

// TestSSEDispatchesAtCRWithoutWaiting: an event whose blank line ends in CR is returned
// at once, not when the next byte shows whether an LF follows (on a live stream that
// byte may come only with the next heartbeat).
func TestSSEDispatchesAtCRWithoutWaiting(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("event: batch\rid: r1.A\rdata: x\r\r"))
	p := newSSEReader(bufio.NewReader(pr), 1<<10)
	got := make(chan wireEvent, 1)
	go func() {
		ev, _ := p.next()
		got <- ev
	}()
	select {
	case ev := <-got:
		if ev.name != "batch" || ev.id != "r1.A" || string(ev.data) != "x" {
			t.Fatalf("got %s", fmtEvents([]wireEvent{ev}))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event was not dispatched at its CR")
	}
}
