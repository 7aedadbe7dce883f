package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// openDelayed opens a DB in a temporary directory with the given CommitDelay and
// MaxGroupCommits, holding one table t of a BIGINT column n.
func openDelayed(t *testing.T, delay time.Duration, maxGroup int) *DB {
	t.Helper()
	db := NewDB(filepath.Join(t.TempDir(), "delay.duckdb"))
	db.CommitDelay = delay
	db.MaxGroupCommits = maxGroup
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateTable(context.Background(), "t", []ColumnSpec{{Name: "n", Type: "BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	return db
}

// appendOne commits one row of t holding n.
func appendOne(t *testing.T, db *DB, n int64) error {
	info, err := db.Table("t")
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(n)
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err = db.Append(context.Background(), Batch{Table: "t", TableID: info.ID, SchemaVersion: info.Schema.Version, Record: rec})
	return err
}

// TestCommitDelayFillsTheGroup: after a group of two, the writer waits (here up to an
// hour) for the next group to fill, so three concurrent appends share one transaction.
func TestCommitDelayFillsTheGroup(t *testing.T) {
	db := openDelayed(t, time.Hour, 3)
	// Read by the writer only after it receives an append, which the sends below order
	// after this write.
	db.writer.lastGroup = 2
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if err := appendOne(t, db, int64(i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if st := db.Stats(); st.Commits != 3 || st.CommitTransactions != 1 {
		t.Fatalf("%d commits in %d transactions, want 3 in 1", st.Commits, st.CommitTransactions)
	}
}

// TestCommitDelayNeverHoldsALoneWriter: with one append at a time, each group has one
// commit and the next is not delayed, however long CommitDelay is.
func TestCommitDelayNeverHoldsALoneWriter(t *testing.T) {
	db := openDelayed(t, time.Hour, 3)
	for i := range 5 {
		if err := appendOne(t, db, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := db.Stats(); st.Commits != 5 || st.CommitTransactions != 5 {
		t.Fatalf("%d commits in %d transactions, want 5 in 5", st.Commits, st.CommitTransactions)
	}
}

// TestCommitDelayEndsAtACatalogChange: a catalog change queued behind a waiting group
// ends the wait; the append commits without the group filling.
func TestCommitDelayEndsAtACatalogChange(t *testing.T) {
	db := openDelayed(t, time.Hour, 3)
	db.writer.lastGroup = 2
	done := make(chan error, 1)
	go func() { done <- appendOne(t, db, 1) }()
	// Each CREATE TABLE is a catalog change: the first one queued after the append ends
	// the writer's wait for more appends.
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if st := db.Stats(); st.Commits != 1 {
				t.Fatalf("%d commits, want 1", st.Commits)
			}
			return
		default:
		}
		if i == 100 {
			t.Fatal("the append still waits after 100 catalog changes")
		}
		if _, err := db.CreateTable(context.Background(), fmt.Sprintf("u%d", i), []ColumnSpec{{Name: "n", Type: "BIGINT"}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCommitDelayEndsAtClose: Close does not wait out the commit delay of a group that
// waits for more appends; its append is answered with an error.
func TestCommitDelayEndsAtClose(t *testing.T) {
	db := openDelayed(t, time.Hour, 3)
	db.writer.lastGroup = 2
	done := make(chan error, 1)
	go func() { done <- appendOne(t, db, 1) }()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("an append waiting in a group at Close committed")
	}
}
