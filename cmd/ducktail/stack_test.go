package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api"
)

// stack is a real ducktail server for end-to-end tests: Main with TLS and its
// self-signed certificate, in a temporary data directory, on a loopback port, and an
// HTTP client that trusts that certificate.
type stack struct {
	dir    string
	addr   string
	cors   []string
	main   *Main
	admin  string
	client *http.Client
	log    *syncBuffer
}

// startStack runs Main on 127.0.0.1:0 with the CORS allow-list cors. The server's log is
// printed if the test fails.
func startStack(t *testing.T, cors ...string) *stack {
	t.Helper()
	st := &stack{dir: t.TempDir(), addr: "127.0.0.1:0", cors: cors, log: &syncBuffer{}}
	st.start(t)
	st.admin = st.main.AdminToken
	pem, err := os.ReadFile(filepath.Join(st.dir, tlsDir, api.SelfSignedCertFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	st.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
	}}
	t.Cleanup(func() {
		st.stop(t)
		if t.Failed() {
			t.Logf("server log:\n%s", st.log.String())
		}
	})
	return st
}

// start runs a new Main on the stack's data directory and address; after the first start
// the address is the port the first one got, so a restart serves the same URL.
func (st *stack) start(t *testing.T) {
	t.Helper()
	m := NewMain()
	m.DataDir = st.dir
	m.Addr = st.addr
	m.API.CORSOrigins = st.cors
	m.Logger = slog.New(slog.NewTextHandler(st.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	m.Out = io.Discard
	// Draining streams are told to come back within half a second, so that a restart
	// is quick; DrainTimeout bounds a stuck drain.
	m.Hub.Retry = 250 * time.Millisecond
	m.DrainSpread = 250 * time.Millisecond
	m.DrainTimeout = 5 * time.Second
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.main = m
	st.addr = strings.TrimPrefix(m.URL, "https://")
}

func (st *stack) stop(t *testing.T) {
	t.Helper()
	if st.main == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.main.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	st.main = nil
}

// restart drains and closes the server, then starts a new one on the same data directory
// and port.
func (st *stack) restart(t *testing.T) {
	t.Helper()
	st.stop(t)
	st.start(t)
}

// URL is the server's base URL, the same across restarts.
func (st *stack) URL() string { return "https://" + st.addr }

// do sends a request with the admin token and returns the status and body.
func (st *stack) do(t *testing.T, method, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, st.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+st.admin)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := st.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// ingest commits body into table and returns the commit's cursor.
func (st *stack) ingest(t *testing.T, table, contentType string, body []byte) string {
	t.Helper()
	status, b := st.do(t, "POST", "/v1/tables/"+url.PathEscape(table)+"/rows?create=true", contentType, body)
	if status != http.StatusCreated {
		t.Fatalf("ingest into %s: status %d: %s", table, status, b)
	}
	var ack struct{ Cursor string }
	if err := json.Unmarshal(b, &ack); err != nil || ack.Cursor == "" {
		t.Fatalf("ingest answer %s: %v", b, err)
	}
	return ack.Cursor
}

// streamToken creates a stream token for table and returns its secret.
func (st *stack) streamToken(t *testing.T, table string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"purpose": "stream", "table": table})
	status, b := st.do(t, "POST", "/v1/tokens", "application/json", body)
	if status != http.StatusCreated {
		t.Fatalf("create token: status %d: %s", status, b)
	}
	var tok struct{ Token string }
	if err := json.Unmarshal(b, &tok); err != nil || tok.Token == "" {
		t.Fatalf("token answer %s: %v", b, err)
	}
	return tok.Token
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
