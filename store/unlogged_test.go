package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/ducktail/ducktail/store"
)

// stillAt is the time of openStill's clock.
var stillAt = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// openStill opens a database whose clock stands still at stillAt, with no idle
// checkpoint: no waiting commit-log row ever grows old enough to be written alone.
func openStill(t *testing.T) (*store.DB, string) {
	t.Helper()
	return openTuned(t, func(db *store.DB) {
		db.IdleCheckpoint = time.Hour
		db.Now = func() time.Time { return stillAt }
	})
}

// commitLog reads the commit log of table name through a read transaction: the rows on
// disk and those waiting in memory, as replay sees them.
func commitLog(t *testing.T, db *store.DB, name string) []store.CommitInfo {
	t.Helper()
	info, err := db.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.CommitInfo
	err = db.Read(context.Background(), func(tx *store.ReadTx) error {
		a, err := tx.Activation(context.Background(), info.ID, info.Head.Activation)
		if err != nil {
			return err
		}
		out, err = tx.Commits(context.Background(), a, 0, a.Head)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loggedOnDisk counts the commit-log rows in the database file at path, opened with
// DuckDB alone.
func loggedOnDisk(t *testing.T, path string) int {
	t.Helper()
	raw, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow("SELECT count(*) FROM ducktail_catalog.commits").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The commit-log rows of unkeyed commits wait in memory and are read as if written; a
// keyed commit and a catalog change write the waiting ones with theirs; a kill -9 loses
// the ones still waiting, and the next Open rebuilds them from the table: rows and schema
// version exactly, a size even when every logged commit was empty, committed_at as the
// time of the rebuild (unlogged.go).
func TestWaitingCommitLogRowsAreReadAndRebuiltAfterKill9(t *testing.T) {
	db, path := openStill(t)
	ctx := context.Background()
	// A table whose only logged commit is empty: its rebuilt rows still get a size.
	if _, err := db.CreateTable(ctx, "quiet", weatherColumns); err != nil {
		t.Fatal(err)
	}
	appendRows(t, db, "quiet", 0, 0)
	for i := range 5 {
		appendRows(t, db, "weather", 2, float64(i))
	}
	if _, err := db.AddColumn(ctx, "weather", store.ColumnSpec{Name: "note", Type: "VARCHAR"}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		appendRows(t, db, "weather", 3, float64(i))
	}
	info, err := db.Table("weather")
	if err != nil {
		t.Fatal(err)
	}
	keyed := store.Batch{Table: "weather", SchemaVersion: info.Schema.Version, Record: weatherBatch(info.Schema, 1, 0),
		IdempotencyKey: "k1", RequestHash: []byte("h1")}
	if _, err := db.Append(ctx, keyed); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		appendRows(t, db, "weather", 4, float64(i))
	}
	appendRows(t, db, "quiet", 1, 0)
	appendRows(t, db, "quiet", 1, 1)
	want := []struct {
		rows    int64
		version int
	}{{2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {3, 2}, {3, 2}, {3, 2}, {3, 2}, {1, 2}, {4, 2}, {4, 2}, {4, 2}, {4, 2}, {4, 2}, {4, 2}}
	check := func(when string, got []store.CommitInfo) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d commits in the log; want %d", when, len(got), len(want))
		}
		for i, c := range got {
			if c.Seq != int64(i+1) || c.Rows != want[i].rows || c.SchemaVersion != want[i].version || !c.CommittedAt.Equal(stillAt) || c.Bytes <= 0 {
				t.Errorf("%s: commit %d is seq %d, %d rows, version %d, at %s, %d bytes; want seq %d, %d rows, version %d, at %s, bytes > 0",
					when, i, c.Seq, c.Rows, c.SchemaVersion, c.CommittedAt, c.Bytes, i+1, want[i].rows, want[i].version, stillAt)
			}
		}
	}
	check("live", commitLog(t, db, "weather"))

	image := crashImage(t, path)
	// quiet's empty commit was written with its transaction, weather's first five by the
	// catalog change, the next five with the keyed commit; weather's last six and quiet's
	// two others still wait.
	if n := loggedOnDisk(t, image); n != 11 {
		t.Fatalf("the crash image has %d commit-log rows; want the 11 written before the last 8 commits", n)
	}
	var logs bytes.Buffer
	reopened := store.NewDB(image)
	reopened.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	reopened.Now = func() time.Time { return stillAt }
	if err := reopened.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "commits=8") {
		t.Errorf("log after reopen %q; want the 8 rebuilt commit-log rows named", logs.String())
	}
	after, err := reopened.Table("weather")
	if err != nil {
		t.Fatal(err)
	}
	if after.Head.Seq != 16 || after.Rows != 2*5+3*4+1+4*6 {
		t.Errorf("after reopen: head %d with %d rows; want 16 and 47", after.Head.Seq, after.Rows)
	}
	check("rebuilt", commitLog(t, reopened, "weather"))
	quiet := commitLog(t, reopened, "quiet")
	if len(quiet) != 3 || quiet[0].Rows != 0 || quiet[1].Rows != 1 || quiet[2].Rows != 1 || quiet[1].Bytes <= 0 || quiet[2].Bytes <= 0 {
		t.Errorf("quiet's commit log after the rebuild: %+v; want 0, 1 and 1 rows, the rebuilt two with bytes > 0", quiet)
	}
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
	if n := loggedOnDisk(t, image); n != 19 {
		t.Errorf("after the rebuild and a clean stop: %d commit-log rows on disk; want 19", n)
	}
}

// A clean stop writes the rows still waiting: the next Open rebuilds nothing.
func TestCloseWritesTheWaitingCommitLogRows(t *testing.T) {
	db, path := openStill(t)
	for i := range 3 {
		appendRows(t, db, "weather", 1, float64(i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := loggedOnDisk(t, path); n != 3 {
		t.Errorf("after Close: %d commit-log rows on disk; want 3", n)
	}
}

// At most 64 commit-log rows wait: the group that would make them 65 writes them all
// with its own.
func TestWaitingCommitLogRowsAreBounded(t *testing.T) {
	db, path := openStill(t)
	for i := range 64 {
		appendRows(t, db, "weather", 1, float64(i))
	}
	if n := loggedOnDisk(t, crashImage(t, path)); n != 0 {
		t.Errorf("after 64 commits: %d commit-log rows on disk; want 0 (all waiting)", n)
	}
	appendRows(t, db, "weather", 1, 64)
	if n := loggedOnDisk(t, crashImage(t, path)); n != 65 {
		t.Errorf("after 65 commits: %d commit-log rows on disk; want 65", n)
	}
	if got := commitLog(t, db, "weather"); len(got) != 65 || got[64].Seq != 65 {
		t.Errorf("the commit log reads %d commits; want 65, the last seq 65", len(got))
	}
}
