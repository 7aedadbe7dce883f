package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

// openTuned opens a store on a new file in t.TempDir(), tuned by tune before Open.
func openTuned(t *testing.T, tune func(*store.DB)) (*store.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ducktail.duckdb")
	db := store.NewDB(path)
	db.Logger = slog.New(slog.DiscardHandler)
	tune(db)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateTable(context.Background(), "weather", weatherColumns); err != nil {
		t.Fatal(err)
	}
	return db, path
}

func walSize(path string) int64 {
	fi, err := os.Stat(path + ".wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}

// waitForEmptyWAL waits until the writer folded the WAL, failing after a generous limit
// (a bound on a background action, not a speed target).
func waitForEmptyWAL(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for walSize(path) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL still holds %d bytes", walSize(path))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCheckpointsRunBetweenWrites: after sustained concurrent appends, the writer folds
// the WAL into the database file once ingest pauses.
func TestCheckpointsRunBetweenWrites(t *testing.T) {
	db, path := openTuned(t, func(db *store.DB) { db.IdleCheckpoint = 20 * time.Millisecond })
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				appendRows(t, db, "weather", 1000, float64(i))
			}
		}()
	}
	wg.Wait()
	waitForEmptyWAL(t, path)
}

// TestCheckpointsRunWhileReadsStayOpen: read transactions that stay open across many
// commits (snapshot downloads, replays) do not stop checkpoints, so the WAL stays under
// its bound. Commits UPDATE no catalog row: an UPDATE committed after a reader began makes
// DuckDB refuse every CHECKPOINT until that reader ends.
func TestCheckpointsRunWhileReadsStayOpen(t *testing.T) {
	const walBound = 64 << 10
	db, path := openTuned(t, func(db *store.DB) {
		db.CheckpointBytes = walBound
		db.CheckpointCommits = 1 << 30
	})
	ctx := context.Background()
	var maxWAL int64
	for round := range 10 {
		held, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- db.Read(ctx, func(tx *store.ReadTx) error {
				info, err := tx.Table(ctx, "weather")
				if err != nil {
					return err
				}
				if err := tx.ScanTable(ctx, info, 1024, func(array.RecordReader) error { return nil }); err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		for i := range 100 {
			appendRows(t, db, "weather", 3, float64(round*100+i))
			maxWAL = max(maxWAL, walSize(path))
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	st := db.Stats()
	if st.CheckpointsFailed != 0 || st.Checkpoints == 0 {
		t.Fatalf("checkpoints: %d ran, %d failed (%s); want some, none failed", st.Checkpoints, st.CheckpointsFailed, st.LastCheckpointError)
	}
	// One group commit of 3 rows adds far less than the bound again.
	if maxWAL > 2*walBound+walBound/2 {
		t.Fatalf("the WAL reached %d bytes with a bound of %d", maxWAL, walBound)
	}
}

// TestCheckpointsFollowCommitCount: under a load that never leaves the writer's queue
// empty, the writer still checkpoints once twice CheckpointCommits commits were made,
// which bounds what a restart after kill -9 must replay.
func TestCheckpointsFollowCommitCount(t *testing.T) {
	const every = 50
	db, _ := openTuned(t, func(db *store.DB) {
		db.CheckpointCommits = every
		db.CheckpointBytes = 1 << 40
	})
	var wg sync.WaitGroup
	const clients, each = 8, 100
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				appendRows(t, db, "weather", 1, float64(c*each+i))
			}
		}()
	}
	wg.Wait()
	// A checkpoint runs at the end of the group commit that reaches 2 × every: at most
	// one group of the clients' commits later.
	if got, want := db.Stats().Checkpoints, int64(clients*each/(2*every+clients)); got < want {
		t.Fatalf("%d checkpoints for %d commits with CheckpointCommits %d; want at least %d", got, clients*each, every, want)
	}
}

// TestHeadsMatchTheSnapshot: the head a read transaction reports is exactly the last
// commit its snapshot holds, while commits land concurrently (heads are pinned with the
// snapshot, not read from a catalog row).
func TestHeadsMatchTheSnapshot(t *testing.T) {
	db, _ := openTuned(t, func(*store.DB) {})
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				appendRows(t, db, "weather", 1, float64(i))
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for range 200 {
		err := db.Read(ctx, func(tx *store.ReadTx) error {
			info, err := tx.Table(ctx, "weather")
			if err != nil {
				return err
			}
			var rows int64
			err = tx.QueryArrow(ctx, "SELECT count(*) FROM weather", nil, func(rr array.RecordReader) error {
				for rr.Next() {
					rows = rr.RecordBatch().Column(0).(*array.Int64).Value(0)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if rows != info.Head.Seq {
				t.Errorf("head seq %d, but the snapshot holds %d one-row commits", info.Head.Seq, rows)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// crashImage copies a database file and its WAL while the database is open, as a kill -9
// would leave them, into a new directory, and returns the copy's path.
func crashImage(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ducktail.duckdb")
	for _, suffix := range []string{"", ".wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestReplayedWALIsReportedAndFolded: opening a database left with a WAL by an unclean
// shutdown logs what was replayed, warns when the WAL ended in a torn write (naming the
// sizes before and after), keeps every commit, and folds the WAL so the next start
// replays nothing.
func TestReplayedWALIsReportedAndFolded(t *testing.T) {
	db, path := openTuned(t, func(db *store.DB) { db.IdleCheckpoint = time.Hour })
	for i := range 20 {
		appendRows(t, db, "weather", 2, float64(i))
	}
	for _, torn := range []int{0, 17} {
		image := crashImage(t, path)
		if torn > 0 {
			f, err := os.OpenFile(image+".wal", os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(bytes.Repeat([]byte{0xA5}, torn))
			f.Close()
		}
		var logs bytes.Buffer
		reopened := store.NewDB(image)
		reopened.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		if err := reopened.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		info, err := reopened.Table("weather")
		if err != nil {
			t.Fatal(err)
		}
		if info.Head.Seq != 20 || info.Rows != 40 {
			t.Errorf("torn %d: head %d with %d rows after reopen; want 20 and 40", torn, info.Head.Seq, info.Rows)
		}
		out := logs.String()
		switch {
		case torn > 0 && !strings.Contains(out, "level=WARN") || torn > 0 && !strings.Contains(out, "torn_bytes=17"):
			t.Errorf("torn tail of %d bytes: log %q; want a warning with torn_bytes=17", torn, out)
		case torn == 0 && (strings.Contains(out, "torn") || !strings.Contains(out, "replayed the WAL")):
			t.Errorf("clean WAL: log %q; want one info line and no torn tail", out)
		}
		if walSize(image) != 0 {
			t.Errorf("torn %d: the WAL holds %d bytes after open; want it folded", torn, walSize(image))
		}
		reopened.Close()
	}
}
