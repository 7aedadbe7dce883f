package jetstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/internal/natstest"
	"github.com/ducktail/ducktail/jetstream"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// writer is an in-process ducktail server publishing to JetStream.
type writer struct {
	stack *api.Stack
	pub   *jetstream.Publisher
	http  *client
}

// openWriter opens a store at path whose events go to the hub and, through a Publisher
// with a queue of queueSize events, to JetStream over nc, and serves it on ln (nil: a new
// loopback port); tune, if any, sets the publisher's fields before it starts. On a store
// without tokens it makes an admin token for the client.
func openWriter(t testing.TB, path string, nc *nats.Conn, queueSize, replicas int, ln net.Listener, tune ...func(*jetstream.Publisher)) *writer {
	t.Helper()
	hub := stream.NewHub(nil)
	pub := jetstream.NewPublisher(hub, queueSize)
	pub.Logger, pub.Replicas = quiet, replicas
	db := store.NewDB(path)
	db.Publisher = pub
	st, err := api.OpenStack(context.Background(), api.StackConfig{Store: db, Hub: hub, API: api.Config{RateLimit: -1}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tune {
		f(pub)
	}
	if err := pub.Start(nc, st.Store); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(st.Handler)
	if ln != nil {
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	token := ""
	if len(st.Store.Tokens()) == 0 {
		if _, token, err = st.Store.CreateToken(context.Background(), store.PurposeAdmin, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	w := &writer{stack: st, pub: pub, http: &client{t: t, base: srv.URL, token: token}}
	t.Cleanup(func() {
		srv.Close()
		pub.Close()
		st.Close()
	})
	return w
}

// TestPublishesEveryEventInOrder ingests commits from concurrent clients, adds a column,
// commits, resets the table, commits and revokes a token, then reads the JetStream stream
// with a plain consumer: on the table's subject every commit once, in seq order, with its
// rows decodable from Arrow IPC, each schema version before the commits that use it, the
// reset between the activations; the revocation on the tokens subject. With a queue of
// one event, most events overflow it and reach JetStream from the commit log instead, in
// the same messages and order.
func TestPublishesEveryEventInOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue int
	}{{"queued", 0}, {"from the commit log", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := natstest.New(t, "n1", 0)
			ns.Start()
			nc := connect(t, ns.URL())
			w := openWriter(t, filepath.Join(t.TempDir(), "ducktail.duckdb"), nc, tc.queue, 1, nil)
			c := w.http
			c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`)
			info, err := w.stack.Store.Table("t")
			if err != nil {
				t.Fatal(err)
			}
			subject := jetstream.TableSubject(jetstream.DefaultSubjectPrefix, info.ID)

			const clients, each = 4, 10
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					for j := range each {
						c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, 1+i*each+j))
					}
				})
			}
			wg.Wait()
			const n = clients * each
			readStream(t, nc, subject, jetstream.HeaderSeq, strconv.Itoa(n))
			c.must(201, "POST", "/v1/tables/t/columns", "application/json", `{"name":"m","type":"BIGINT"}`)
			c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", `{"n":41,"m":7}`)
			readStream(t, nc, subject, jetstream.HeaderSeq, strconv.Itoa(n+1))
			c.must(200, "POST", "/v1/tables/t/reset", "", "")
			c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", `{"n":42}`)
			var tok struct{ ID string }
			json.Unmarshal([]byte(c.must(201, "POST", "/v1/tokens", "application/json", `{"purpose":"stream","table":"t"}`)), &tok)
			c.must(204, "DELETE", "/v1/tokens/"+tok.ID, "", "")
			msgs := readStream(t, nc, "ducktail.tokens", jetstream.HeaderTokenID, tok.ID)

			after, err := w.stack.Store.Table("t")
			if err != nil {
				t.Fatal(err)
			}
			a, b := info.Head.Activation.String(), after.Head.Activation.String()
			var got []string
			var rows []int64
			for _, m := range msgs {
				if m.subject != subject {
					got = append(got, m.subject+" "+m.get(jetstream.HeaderEvent)+" "+m.get(jetstream.HeaderTokenID))
					continue
				}
				act := map[string]string{a: "A", b: "B"}[m.get(jetstream.HeaderActivation)]
				line := fmt.Sprintf("%s %s seq=%s v=%s", m.get(jetstream.HeaderEvent), act, m.get(jetstream.HeaderSeq), m.get(jetstream.HeaderSchemaVersion))
				switch m.get(jetstream.HeaderEvent) {
				case jetstream.EventCommit:
					vals := column(t, m.data, "n")
					if len(vals) != 1 || m.get(jetstream.HeaderRows) != "1" || m.get(jetstream.HeaderTable) != "t" || m.get(jetstream.HeaderCommittedAt) == "" {
						t.Fatalf("commit %s: rows %v, headers %v", line, vals, m.header)
					}
					rows = append(rows, vals[0])
				case jetstream.EventActivationEnded:
					line += " " + m.get(jetstream.HeaderReason) + " next=" + map[string]string{b: "B"}[m.get(jetstream.HeaderNewActivation)]
				}
				got = append(got, line)
			}
			want := []string{"schema A seq=0 v=1"}
			for s := 1; s <= n; s++ {
				want = append(want, fmt.Sprintf("commit A seq=%d v=1", s))
			}
			want = append(want, fmt.Sprintf("schema A seq=%d v=2", n), fmt.Sprintf("commit A seq=%d v=2", n+1),
				fmt.Sprintf("activation-ended A seq=%d v= table_reset next=B", n+1),
				"schema B seq=0 v=1", "commit B seq=1 v=1",
				"ducktail.tokens token-revoked "+tok.ID)
			if !slices.Equal(got, want) {
				t.Fatalf("stream:\n%v\nwant:\n%v", got, want)
			}
			first := slices.Sorted(slices.Values(rows[:n]))
			for i, v := range first {
				if v != int64(i+1) {
					t.Fatalf("rows of the first %d commits: %v", n, rows[:n])
				}
			}
			if !slices.Equal(rows[n:], []int64{41, 42}) {
				t.Fatalf("rows after the column and the reset: %v", rows[n:])
			}
		})
	}
}

// TestCatchUpSkipsCommitsPastRetention commits while JetStream is down, on a clock that
// puts those commits past the stream's retention by the time it is up: the writer does
// not publish them (JetStream would have expired them), and the next commit arrives after
// the schema, alone.
func TestCatchUpSkipsCommitsPastRetention(t *testing.T) {
	ns := natstest.New(t, "n1", 0)
	nc := connect(t, ns.URL())
	w := openWriter(t, filepath.Join(t.TempDir(), "ducktail.duckdb"), nc, 0, 1, nil, func(p *jetstream.Publisher) {
		p.MaxAge, p.Retry, p.PublishTimeout = time.Hour, 20*time.Millisecond, time.Second
		p.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	})
	c := w.http
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`)
	for n := 1; n <= 3; n++ {
		c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, n))
	}
	ns.Start()
	subject := jetstream.TableSubject(jetstream.DefaultSubjectPrefix, 1)
	// The three commits' events stay queued until the catch-up has run; a commit made
	// before would be in it, and past the retention on the test's clock.
	waitFor(t, "the catch-up", func() bool { return w.pub.Stats().Queued == 0 })
	c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", `{"n":4}`)
	msgs := readStream(t, nc, subject, jetstream.HeaderSeq, "4")
	var got []string
	for _, m := range msgs {
		got = append(got, m.get(jetstream.HeaderEvent)+" "+m.get(jetstream.HeaderSeq))
	}
	if want := []string{"schema 3", "commit 4"}; !slices.Equal(got, want) {
		t.Fatalf("stream: %v, want %v", got, want)
	}
}

// TestOverflowIsReadFromTheCommitLog fills a queue of one event while JetStream is down:
// the events that did not fit are counted, and once JetStream is up they reach it from the
// commit log, each schema version before the commits that use it.
func TestOverflowIsReadFromTheCommitLog(t *testing.T) {
	ns := natstest.New(t, "n1", 0)
	nc := connect(t, ns.URL())
	w := openWriter(t, filepath.Join(t.TempDir(), "ducktail.duckdb"), nc, 1, 1, nil, func(p *jetstream.Publisher) {
		p.Retry, p.PublishTimeout = 20*time.Millisecond, time.Second
	})
	c := w.http
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`)
	for n := 1; n <= 5; n++ {
		c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, n))
	}
	c.must(201, "POST", "/v1/tables/t/columns", "application/json", `{"name":"m","type":"BIGINT"}`)
	c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", `{"n":6,"m":1}`)
	// Nine events: the admin token's creation, the table's start, five commits, the
	// schema change, a commit.
	if st := w.pub.Stats(); st.Overflows != 8 || st.Queued != 1 {
		t.Fatalf("stats before JetStream is up: %+v; want 8 overflows, 1 queued", st)
	}
	ns.Start()
	msgs := readStream(t, nc, jetstream.TableSubject(jetstream.DefaultSubjectPrefix, 1), jetstream.HeaderSeq, "6")
	var got []string
	for _, m := range msgs {
		line := fmt.Sprintf("%s %s v%s", m.get(jetstream.HeaderEvent), m.get(jetstream.HeaderSeq), m.get(jetstream.HeaderSchemaVersion))
		if m.get(jetstream.HeaderEvent) == jetstream.EventCommit {
			line += fmt.Sprint(" ", column(t, m.data, "n"))
		}
		got = append(got, line)
	}
	want := []string{"schema 0 v1", "commit 1 v1 [1]", "commit 2 v1 [2]", "commit 3 v1 [3]", "commit 4 v1 [4]",
		"commit 5 v1 [5]", "schema 5 v2", "commit 6 v2 [6]"}
	if !slices.Equal(got, want) {
		t.Fatalf("stream: %v\nwant: %v", got, want)
	}
}
