package jetstream_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/jetstream"
)

// connect returns a client connection that reconnects without end.
func connect(t testing.TB, urls string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// message is one stored message of the stream, as a plain consumer reads it.
type message struct {
	subject string
	header  nats.Header
	data    []byte
}

func (m message) get(h string) string { return m.header.Get(h) }

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// readStream waits until the stream holds a message on subject whose header h is v, then
// returns every message of the stream, in stream order, read by an ordered consumer.
func readStream(t testing.TB, nc *nats.Conn, subject, h, v string) []message {
	t.Helper()
	js, err := njs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	waitFor(t, subject+" "+h+"="+v, func() bool {
		s, err := js.Stream(ctx, jetstream.DefaultStream)
		if err != nil {
			return false
		}
		m, err := s.GetLastMsgForSubject(ctx, subject)
		return err == nil && m.Header.Get(h) == v
	})
	// A cluster answers JetStream API requests only while the stream has a leader: a
	// request in the moment a node joins or leaves can find no responder, so the read is
	// tried again until it succeeds.
	var out []message
	var lastErr error
	waitFor(t, "a read of the stream", func() bool {
		out, lastErr = readAll(ctx, js)
		return lastErr == nil
	})
	return out
}

// readAll reads every message of the stream with an ordered consumer.
func readAll(ctx context.Context, js njs.JetStream) ([]message, error) {
	s, err := js.Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.OrderedConsumer(ctx, njs.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	var out []message
	for uint64(len(out)) < info.State.Msgs {
		batch, err := c.Fetch(int(info.State.Msgs)-len(out), njs.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		for m := range batch.Messages() {
			out = append(out, message{subject: m.Subject(), header: m.Headers(), data: m.Data()})
		}
		if batch.Error() != nil {
			return nil, batch.Error()
		}
	}
	return out, nil
}

// column returns the BIGINT column name of every batch of an Arrow IPC stream.
func column(t testing.TB, data []byte, name string) []int64 {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out []int64
	for r.Next() {
		rec := r.RecordBatch()
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %q in %v", name, rec.Schema())
		}
		out = append(out, rec.Column(idx[0]).(*array.Int64).Int64Values()...)
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out
}

// client calls a ducktail server's HTTP API with a bearer token.
type client struct {
	t     testing.TB
	base  string
	token string
}

func (c *client) do(method, path, contentType, body string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.base+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// must calls do and fails the test unless the status is want.
func (c *client) must(want int, method, path, contentType, body string) string {
	c.t.Helper()
	st, b := c.do(method, path, contentType, body)
	if st != want {
		c.t.Fatalf("%s %s: %d %s", method, path, st, b)
	}
	return b
}

var quiet = slog.New(slog.DiscardHandler)
