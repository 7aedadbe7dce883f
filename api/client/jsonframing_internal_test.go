package client

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func readAllJSON(r io.Reader, seq bool, max int) ([]wireEvent, error) {
	j := &jsonReader{r: bufio.NewReaderSize(r, 16), seq: seq, max: max}
	var out []wireEvent
	for {
		ev, err := j.next()
		if err != nil {
			return out, err
		}
		ev.data = slices.Clone(ev.data)
		out = append(out, ev)
	}
}

const (
	recSchema    = `{"event":"schema","id":"r1.A","data":"c2NoZW1h"}`
	recHeartbeat = `{"event":"heartbeat"}`
	recReconnect = `{"event":"reconnect","data":{"reason":"slow_consumer","retry_ms":7}}`
	wantEvents   = `{schema id="r1.A" data="c2NoZW1h"}{heartbeat id="" data=""}{reconnect id="" data="{\"reason\":\"slow_consumer\",\"retry_ms\":7}"}`
)

// TestNDJSONRecords: one record per LF-ended line, CRLF too, blank lines skipped, any
// split; a last line without its LF is a truncation, never an event.
func TestNDJSONRecords(t *testing.T) {
	in := recSchema + "\n" + recHeartbeat + "\n\n" + recReconnect + "\n"
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"LF", strings.NewReader(in)},
		{"CRLF", strings.NewReader(strings.ReplaceAll(in, "\n", "\r\n"))},
		{"one byte at a time", iotest.OneByteReader(strings.NewReader(in))},
	} {
		got, err := readAllJSON(tc.r, false, 1<<10)
		if fmtEvents(got) != wantEvents || err != io.EOF {
			t.Errorf("%s: %s, %v", tc.name, fmtEvents(got), err)
		}
	}
	got, err := readAllJSON(strings.NewReader(recSchema+"\n"+recHeartbeat), false, 1<<10)
	if len(got) != 1 || err != io.ErrUnexpectedEOF {
		t.Errorf("truncated last line: %s, %v; want one event and io.ErrUnexpectedEOF", fmtEvents(got), err)
	}
	if _, err := readAllJSON(strings.NewReader(recSchema+"\n"), false, 20); !errors.Is(err, ErrEventTooLarge) {
		t.Errorf("long line: %v, want ErrEventTooLarge", err)
	}
	if _, err := readAllJSON(strings.NewReader("{\"event\":\n"), false, 1<<10); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("malformed line: %v, want a decoding error", err)
	}
}

// TestJSONSeqRecords: RFC 7464 records, CRLF, any split; bytes before the first RS are
// skipped; a record truncated by the next RS is skipped (§2.3) and the reader
// resynchronises; a valid record followed by RS without its LF is kept; a record
// truncated by the end of input is not an event.
func TestJSONSeqRecords(t *testing.T) {
	const rs = "\x1e"
	in := rs + recSchema + "\n" + rs + recHeartbeat + "\n" + rs + recReconnect + "\n"
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"LF", strings.NewReader(in)},
		{"CRLF", strings.NewReader(strings.ReplaceAll(in, "\n", "\r\n"))},
		{"one byte at a time", iotest.OneByteReader(strings.NewReader(in))},
		{"garbage first", strings.NewReader("junk\n" + in)},
		{"truncated record skipped", strings.NewReader(rs + recSchema + "\n" + rs + `{"event":"ba` + rs + recHeartbeat + "\n" + rs + recReconnect + "\n")},
		{"no LF before RS", strings.NewReader(rs + recSchema + rs + recHeartbeat + "\n" + rs + recReconnect + "\n")},
	} {
		got, err := readAllJSON(tc.r, true, 1<<10)
		if fmtEvents(got) != wantEvents || err != io.EOF {
			t.Errorf("%s: %s, %v", tc.name, fmtEvents(got), err)
		}
	}
	got, err := readAllJSON(strings.NewReader(rs+recSchema+"\n"+rs+`{"event":"ba`), true, 1<<10)
	if len(got) != 1 || err != io.ErrUnexpectedEOF {
		t.Errorf("truncated at the end: %s, %v; want one event and io.ErrUnexpectedEOF", fmtEvents(got), err)
	}
}

// TestJSONSeqDispatchesAtLF: a record is returned at its LF, without waiting for the
// next RS, which on a live stream may come only with the next heartbeat.
func TestJSONSeqDispatchesAtLF(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("\x1e" + recSchema + "\n"))
	j := &jsonReader{r: bufio.NewReader(pr), seq: true, max: 1 << 10}
	got := make(chan wireEvent, 1)
	go func() {
		ev, _ := j.next()
		got <- ev
	}()
	select {
	case ev := <-got:
		if ev.name != "schema" {
			t.Fatalf("got %s", fmtEvents([]wireEvent{ev}))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the record was not returned at its LF")
	}
}
