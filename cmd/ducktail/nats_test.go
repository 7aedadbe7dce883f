package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/internal/natstest"
	"github.com/ducktail/ducktail/jetstream"
)

// TestServeWithNATSURLPublishesCommits runs the server with --nats-url's setting against
// an embedded JetStream server: a commit ingested over HTTP reaches the stream on its
// table's subject, and /metrics has the publisher's metrics.
func TestServeWithNATSURLPublishesCommits(t *testing.T) {
	ns := natstest.New(t, "n1", 0)
	ns.Start()
	dir := t.TempDir()
	m := NewMain()
	m.DataDir, m.Addr, m.Plaintext = dir, "127.0.0.1:0", true
	m.Logger, m.Out = slog.New(slog.DiscardHandler), io.Discard
	m.NATS.URL = ns.URL()
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	cfg := clientConfig{server: m.URL, dataDir: dir}
	c, err := cfg.newClient()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.doJSON("POST", "/v1/tables", map[string]any{"name": "t", "columns": []map[string]string{{"name": "n", "type": "BIGINT"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.doJSON("POST", "/v1/tables/t/rows", []map[string]int{{"n": 1}}, nil); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := njs.New(nc)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		s, err := js.Stream(context.Background(), jetstream.DefaultStream)
		if err == nil {
			msg, err := s.GetLastMsgForSubject(context.Background(), jetstream.TableSubject(jetstream.DefaultSubjectPrefix, 1))
			if err == nil && msg.Header.Get(jetstream.HeaderEvent) == jetstream.EventCommit && msg.Header.Get(jetstream.HeaderSeq) == "1" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the commit did not reach JetStream")
		}
	}
	resp, err := http.Get(m.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, name := range []string{"published_total", "overflows_total", "publish_failures_total", "queued_events", "publish_lag_seconds"} {
		if !strings.Contains(string(body), "\nducktail_jetstream_"+name+" ") {
			t.Errorf("/metrics has no ducktail_jetstream_%s:\n%s", name, body)
		}
	}
}
