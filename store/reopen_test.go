package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducktail/ducktail/store"
)

func TestReopenKeepsCatalogAndCursorKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ducktail.duckdb")
	ctx := context.Background()
	db := store.NewDB(path)
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	info, _ := db.CreateTable(ctx, "weather", weatherColumns)
	appendRows(t, db, "weather", 4, 1)
	appendRows(t, db, "weather", 1, 1)
	if _, err := db.AddColumn(ctx, "weather", store.ColumnSpec{Name: "wind", Type: "DOUBLE"}); err != nil {
		t.Fatal(err)
	}
	probe := store.Position{TableID: info.ID, Activation: info.Head.Activation, Seq: 2}
	cursor := db.Cursors().Encode(probe)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2, _ := openDB(t, path)
	if again := db2.Cursors().Encode(probe); again != cursor {
		t.Fatalf("cursor key changed across reopen: the same position encodes as %q, was %q", again, cursor)
	}
	got, err := db2.Table("weather")
	if err != nil {
		t.Fatal(err)
	}
	if got.Head != (store.Position{TableID: info.ID, Activation: info.Head.Activation, Seq: 2}) || got.Rows != 5 || got.Schema.Version != 2 || len(got.Schema.Columns) != 4 {
		t.Fatalf("after reopen: %+v", got)
	}
	if c := appendRows(t, db2, "weather", 1, 1); c.Position.Seq != 3 {
		t.Fatalf("seq after reopen = %d, want 3", c.Position.Seq)
	}
}

// TestOpenNeedsPath: a DB without a Path fails Open instead of opening something else.
func TestOpenNeedsPath(t *testing.T) {
	db := store.NewDB("")
	if err := db.Open(context.Background()); err == nil {
		db.Close()
		t.Fatal("Open with an empty Path succeeded")
	}
	if db.Cursors() != nil {
		t.Fatal("a DB that failed Open has a cursor codec")
	}
}

// TestOpenRefusesDSNDelimitersInThePath: a path holding '#' or '?' fails Open. duckdb-go
// would open the file with its settings read from the wrong part of the DSN, or none:
// with a '#', DuckDB opened the file allowing external access.
func TestOpenRefusesDSNDelimitersInThePath(t *testing.T) {
	for _, dir := range []string{"data#1", "data?x=1"} {
		path := filepath.Join(t.TempDir(), dir, "ducktail.duckdb")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		db := store.NewDB(path)
		err := db.Open(context.Background())
		if err == nil {
			db.Close()
			t.Fatalf("Open(%q) succeeded", path)
		}
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("Open(%q): %v, want the error to name the path", path, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Open(%q) left a file behind (%v)", path, err)
		}
	}
}

// TestAcknowledgedCommitsSurviveKill9 runs a child process that appends commits and prints
// each acknowledged seq, kills it with SIGKILL mid-stream, reopens the file and checks that
// every acknowledged commit is there (docs/design.md, "Storage model": nothing acknowledged may be lost).
func TestAcknowledgedCommitsSurviveKill9(t *testing.T) {
	if os.Getenv("DUCKTAIL_KILL9_CHILD") != "" {
		t.Skip("child mode runs in TestKill9Child")
	}
	path := filepath.Join(t.TempDir(), "ducktail.duckdb")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.v")
	cmd.Env = append(os.Environ(), "DUCKTAIL_KILL9_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked int64
	sc := bufio.NewScanner(out)
	deadline := time.After(2 * time.Minute)
	for acked < 40 && sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
			acked, _ = strconv.ParseInt(s, 10, 64)
		}
		select {
		case <-deadline:
			t.Fatal("child too slow")
		default:
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if acked < 40 {
		t.Fatalf("child acknowledged only %d commits", acked)
	}

	db, _ := openDB(t, path)
	info, err := db.Table("weather")
	if err != nil {
		t.Fatal(err)
	}
	if info.Head.Seq < acked {
		t.Fatalf("head after kill -9 = %d, but %d commits were acknowledged", info.Head.Seq, acked)
	}
	rows := readColumn(t, db, "SELECT temp_max FROM weather")
	if int64(len(rows)) != info.Head.Seq*10 {
		t.Fatalf("rows = %d, want %d (10 per commit)", len(rows), info.Head.Seq*10)
	}
	commits := replayAll(t, db, "weather", 0)
	if int64(len(commits)) != info.Head.Seq {
		t.Fatalf("commit log has %d commits, head is %d", len(commits), info.Head.Seq)
	}
}

// TestKill9Child is the child of TestAcknowledgedCommitsSurviveKill9: it appends until
// killed, printing "ACK <seq>" after each acknowledged commit.
func TestKill9Child(t *testing.T) {
	path := os.Getenv("DUCKTAIL_KILL9_CHILD")
	if path == "" {
		t.Skip("run by TestAcknowledgedCommitsSurviveKill9")
	}
	db := store.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(context.Background(), "weather", weatherColumns); err != nil {
		t.Fatal(err)
	}
	// DUCKTAIL_KILL9_CLIENTS appends from that many goroutines at once (a sustained load
	// that keeps the writer's queue full); each prints its own acknowledgements.
	clients, _ := strconv.Atoi(os.Getenv("DUCKTAIL_KILL9_CLIENTS"))
	var out sync.Mutex
	for c := range max(clients, 1) {
		go func() {
			for i := 0; ; i++ {
				commit := appendRows(t, db, "weather", 10, float64(c*1_000_000+i))
				out.Lock()
				fmt.Printf("ACK %d\n", commit.Position.Seq)
				out.Unlock()
			}
		}()
	}
	select {}
}
