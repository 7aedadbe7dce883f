package jetstream_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/internal/natstest"
	"github.com/ducktail/ducktail/jetstream"
)

// writerChildEnv tells the test binary to run as the writer child of
// TestKill9BetweenCommitAndPublish: "<db path>|<listen address>|<NATS URL>".
const writerChildEnv = "DUCKTAIL_JETSTREAM_WRITER_CHILD"

// TestWriterChild serves a writer publishing to JetStream until it is killed. It prints
// "READY <admin token>" once serving (the token only on its first start).
func TestWriterChild(t *testing.T) {
	spec := os.Getenv(writerChildEnv)
	if spec == "" {
		t.Skip("run by TestKill9BetweenCommitAndPublish")
	}
	parts := strings.Split(spec, "|")
	ln, err := net.Listen("tcp", parts[1])
	if err != nil {
		t.Fatal(err)
	}
	w := openWriter(t, parts[0], connect(t, parts[2]), 0, 1, ln)
	fmt.Printf("READY %s\n", w.http.token)
	select {}
}

// startWriter starts the writer child and waits until it serves.
func startWriter(t *testing.T, path, addr, natsURL string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterChild$")
	cmd.Env = append(os.Environ(), writerChildEnv+"="+path+"|"+addr+"|"+natsURL)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY") {
		t.Fatalf("writer did not start: %q %v", line, err)
	}
	return cmd, strings.TrimSpace(strings.TrimPrefix(line, "READY"))
}

// TestKill9BetweenCommitAndPublish commits while JetStream is reachable, then while it is
// down (each commit acknowledged to its producer but not published), kills the writer with
// SIGKILL, brings JetStream back and restarts the writer: the stream then holds every
// acknowledged commit exactly once, in seq order, each with its rows; after one more
// restart and commit it still holds each once.
func TestKill9BetweenCommitAndPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills writer processes")
	}
	ns := natstest.New(t, "n1", 0)
	ns.Start()
	path := filepath.Join(t.TempDir(), "ducktail.duckdb")
	addr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	cmd, token := startWriter(t, path, addr, ns.URL())
	c := &client{t: t, base: "http://" + addr, token: token}
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`)
	const published, unpublished = 5, 5
	for n := 1; n <= published; n++ {
		c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, n))
	}
	nc := connect(t, ns.URL())
	subject := jetstream.TableSubject(jetstream.DefaultSubjectPrefix, 1)
	readStream(t, nc, subject, jetstream.HeaderSeq, strconv.Itoa(published))

	ns.Stop()
	for n := published + 1; n <= published+unpublished; n++ {
		c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, n))
	}
	cmd.Process.Kill()
	cmd.Wait()

	ns.Start()
	check := func() {
		t.Helper()
		msgs := readStream(t, nc, subject, jetstream.HeaderSeq, strconv.Itoa(published+unpublished))
		if len(msgs) != 1+published+unpublished || msgs[0].get(jetstream.HeaderEvent) != jetstream.EventSchema {
			t.Fatalf("%d messages, the first %v; want the schema and %d commits", len(msgs), msgs[0].header, published+unpublished)
		}
		for i, m := range msgs[1:] {
			seq := strconv.Itoa(i + 1)
			if m.get(jetstream.HeaderEvent) != jetstream.EventCommit || m.get(jetstream.HeaderSeq) != seq {
				t.Fatalf("message %d: %v; want commit %s", i+1, m.header, seq)
			}
			if rows := column(t, m.data, "n"); len(rows) != 1 || rows[0] != int64(i+1) {
				t.Fatalf("commit %s: rows %v", seq, rows)
			}
		}
	}
	cmd, _ = startWriter(t, path, addr, ns.URL())
	check()
	cmd.Process.Kill()
	cmd.Wait()
	startWriter(t, path, addr, ns.URL())
	c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", `{"n":11}`)
	msgs := readStream(t, nc, subject, jetstream.HeaderSeq, "11")
	if len(msgs) != 12 {
		t.Fatalf("%d messages after a restart and one commit; want 12", len(msgs))
	}
}
