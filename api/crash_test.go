package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducktail/ducktail/internal/ssetest"
	"github.com/ducktail/ducktail/store"
)

// crashChildEnv tells the test binary to run as the server child of
// TestKill9WhileIngestingAndStreaming: "<db path>|<listen address>".
const crashChildEnv = "DUCKTAIL_CRASH_CHILD"

// TestCrashChild serves a real stack on the address the parent chose until it is killed.
// On its first start it creates an admin token and prints it.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("run by TestKill9WhileIngestingAndStreaming")
	}
	path, addr, _ := strings.Cut(spec, "|")
	ctx := context.Background()
	db, _, handler := openStack(t, path, options{})
	token := ""
	if len(db.Tokens()) == 0 {
		_, token, _ = db.CreateToken(ctx, store.PurposeAdmin, "", 0)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("READY %s\n", token)
	srv := &http.Server{Handler: handler}
	srv.Serve(ln)
}

// crashServer runs the child server process and restarts it on the same address.
type crashServer struct {
	t     *testing.T
	path  string
	addr  string
	cmd   *exec.Cmd
	token string
}

func (c *crashServer) start() {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+c.path+"|"+c.addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY") {
		c.t.Fatalf("child did not start: %q %v", line, err)
	}
	if tok := strings.TrimSpace(strings.TrimPrefix(line, "READY")); tok != "" {
		c.token = tok
	}
	c.cmd = cmd
}

// kill sends SIGKILL: no drain, no checkpoint, no goodbye.
func (c *crashServer) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// TestKill9WhileIngestingAndStreaming ingests from a client while subscribers read, kills
// the server with SIGKILL, restarts it, resumes every subscriber from its last cursor, in
// a loop; then checks that every acknowledged commit is in the table exactly once and
// that every subscriber received exactly the table's rows, each once, in order.
func TestKill9WhileIngestingAndStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills server processes")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &crashServer{t: t, path: filepath.Join(t.TempDir(), "ducktail.duckdb"), addr: ln.Addr().String()}
	ln.Close()
	srv.start()
	defer func() { srv.kill() }()
	base := "http://" + srv.addr
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(path, contentType string, body []byte, key string) (int, []byte, error) {
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.token)
		req.Header.Set("Content-Type", contentType)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	st, b, err := post("/v1/tables", "application/json", []byte(`{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`), "")
	if st != 201 {
		t.Fatalf("create: %d %s %v", st, b, err)
	}
	// Every subscriber starts from the new table's cursor, before its first commit.
	var created struct{ Cursor string }
	json.Unmarshal(b, &created)

	// The ingest client: commit n = 1, 2, 3, … one row each, retrying each commit with its
	// Idempotency-Key until acknowledged.
	var mu sync.Mutex
	var acked []int64
	stopIngest := make(chan struct{})
	ingestDone := make(chan struct{})
	go func() {
		defer close(ingestDone)
		for n := int64(1); ; n++ {
			for {
				select {
				case <-stopIngest:
					return
				default:
				}
				st, _, err := post("/v1/tables/t/rows", "application/x-ndjson", fmt.Appendf(nil, `{"n":%d}`, n), fmt.Sprint("commit-", n))
				if err == nil && (st == 201 || st == 200) {
					mu.Lock()
					acked = append(acked, n)
					mu.Unlock()
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()

	// Subscribers: each resumes from the cursor of the last batch it processed.
	type subscriber struct {
		mu     sync.Mutex
		cursor string
		rows   []int64
	}
	subs := make([]*subscriber, 3)
	stopSubs := make(chan struct{})
	var wg sync.WaitGroup
	for i := range subs {
		s := &subscriber{cursor: created.Cursor}
		subs[i] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopSubs:
					return
				default:
				}
				req, _ := http.NewRequest("GET", base+"/v1/tables/t/stream", nil)
				req.Header.Set("Authorization", "Bearer "+srv.token)
				s.mu.Lock()
				if s.cursor != "" {
					req.Header.Set("Last-Event-ID", s.cursor)
				}
				s.mu.Unlock()
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					select {
					case <-stopSubs:
					case <-ctx.Done():
					}
					cancel()
				}()
				resp, err := http.DefaultClient.Do(req.WithContext(ctx))
				if err != nil || resp.StatusCode != 200 {
					cancel()
					time.Sleep(50 * time.Millisecond)
					continue
				}
				p := ssetest.NewParser(resp.Body)
				for {
					ev, err := p.Next()
					if err != nil {
						break
					}
					if ev.Event == "refresh-required" || ev.Event == "failure" {
						t.Errorf("subscriber got %+v", ev)
						cancel()
						return
					}
					if ev.Event != "batch" {
						continue
					}
					_, recs := decodePayload(t, ev.Data)
					s.mu.Lock()
					s.rows = append(s.rows, nValues(recs)...)
					s.cursor = ev.ID
					s.mu.Unlock()
				}
				resp.Body.Close()
				cancel()
			}
		}()
	}

	for round := 0; round < 3; round++ {
		time.Sleep(700 * time.Millisecond)
		srv.kill()
		srv.start()
	}
	time.Sleep(500 * time.Millisecond)
	close(stopIngest)
	<-ingestDone

	// The table is the oracle: wait until every subscriber has all of it.
	var table []int64
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequest("GET", base+"/v1/tables/t/snapshot", nil)
		req.Header.Set("Authorization", "Bearer "+srv.token)
		req.Header.Set("Accept", "application/x-ndjson")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		table = table[:0]
		for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
			var row struct{ N int64 }
			json.Unmarshal(line, &row)
			table = append(table, row.N)
		}
		caughtUp := true
		for _, s := range subs {
			s.mu.Lock()
			caughtUp = caughtUp && len(s.rows) >= len(table)
			s.mu.Unlock()
		}
		if caughtUp {
			break
		}
		if attempt > 300 {
			for i, s := range subs {
				s.mu.Lock()
				d := firstDiff(s.rows, table)
				t.Logf("subscriber %d: %d rows, cursor %s, first difference at %d: %v vs table %v", i, len(s.rows), s.cursor, d,
					s.rows[max(d-3, 0):min(d+3, len(s.rows))], table[max(d-3, 0):min(d+3, len(table))])
				s.mu.Unlock()
			}
			t.Fatalf("subscribers did not catch up with the table's %d rows", len(table))
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stopSubs)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 10 {
		t.Fatalf("only %d commits were acknowledged", len(acked))
	}
	seen := map[int64]bool{}
	for _, n := range table {
		if seen[n] {
			t.Fatalf("n=%d is in the table twice", n)
		}
		seen[n] = true
	}
	for _, n := range acked {
		if !seen[n] {
			t.Fatalf("acknowledged commit n=%d is missing from the table after kill -9", n)
		}
	}
	for i, s := range subs {
		if !slices.Equal(s.rows, table) {
			t.Fatalf("subscriber %d received %d rows, the table has %d (first difference at %d)", i, len(s.rows), len(table), firstDiff(s.rows, table))
		}
	}
	t.Logf("%d commits acknowledged across 3 kill -9 restarts; %d rows in the table; 3 subscribers exact", len(acked), len(table))
}
