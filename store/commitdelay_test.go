package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
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

// expectBack makes the writer of db expect n appends back: as if it had just answered a
// group of n. Read by the writer only after it receives an append, which the caller's
// sends order after this write.
func expectBack(db *DB, n int) {
	db.writer.lastGroup, db.writer.answeredAt = n, db.Now()
}

// TestCommitDelayFillsTheGroup: after answering a group of three, the writer waits (here up
// to an hour) for three appends, so three concurrent appends share one transaction.
func TestCommitDelayFillsTheGroup(t *testing.T) {
	db := openDelayed(t, time.Hour, 3)
	expectBack(db, 3)
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
	expectBack(db, 2)
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
	expectBack(db, 2)
	done := make(chan error, 1)
	go func() { done <- appendOne(t, db, 1) }()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("an append waiting in a group at Close committed")
	}
}

// TestCommitDelayExpectsTheQueuedAndTheAnswered: the appends queued while the last group
// committed join the writers of that group coming back; the group waits for them all.
func TestCommitDelayExpectsTheQueuedAndTheAnswered(t *testing.T) {
	w := bareWriter(time.Hour)
	w.lastGroup, w.answeredAt = 2, w.db.Now()
	w.answers.Store(1)
	for range 3 {
		w.ops <- &op{batch: oneRowBatch(t), answers: 0} // queued before the answers
	}
	go func() {
		for range 2 {
			w.ops <- &op{batch: oneRowBatch(t), answers: 1} // the answered writers, back
		}
	}()
	group, next := w.gather(context.Background(), <-w.ops)
	if len(group) != 5 || next != nil {
		t.Fatalf("gathered %d appends (next %v), want 5: 2 answered and 3 queued", len(group), next)
	}
}

// TestCommitDelayForgetsAnOldGroup: a group answered longer than CommitDelay ago is not
// expected back, so a later append commits without waiting.
func TestCommitDelayForgetsAnOldGroup(t *testing.T) {
	w := bareWriter(time.Hour)
	w.lastGroup, w.answeredAt = 5, w.db.Now().Add(-2*time.Hour)
	w.answers.Store(1)
	done := make(chan int, 1)
	go func() {
		group, _ := w.gather(context.Background(), &op{batch: oneRowBatch(t), answers: 1})
		done <- len(group)
	}()
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("gathered %d appends, want 1", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the append still waits for a group answered two hours ago")
	}
}

// bareWriter is a writer without a database, for gather alone.
func bareWriter(delay time.Duration) *writer {
	db := &DB{CommitDelay: delay, MaxGroupCommits: DefaultMaxGroupCommits, MaxGroupRows: DefaultMaxGroupRows, Now: time.Now}
	return &writer{db: db, ops: make(chan *op, 16)}
}

// oneRowBatch is an append of one BIGINT row, released with t.
func oneRowBatch(t *testing.T) *Batch {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(1)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
	t.Cleanup(rec.Release)
	return &Batch{Table: "t", Record: rec}
}
