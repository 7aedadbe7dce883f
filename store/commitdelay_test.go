package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
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

// appendFrom commits one row of t holding n, from writer.
func appendFrom(t *testing.T, db *DB, writer string, n int64) error {
	info, err := db.Table("t")
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(n)
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err = db.Append(context.Background(), Batch{Table: "t", TableID: info.ID, SchemaVersion: info.Schema.Version, Record: rec, Writer: writer})
	return err
}

// expectBack makes the writer of db expect one append from each of writers: as if it had
// just answered a group of theirs that had come back promptly. Read by the writer only
// after it receives an append, which the caller's sends order after this write.
func expectBack(db *DB, writers ...string) {
	r := &db.writer.returns
	r.expecting, r.answeredAt = len(writers), db.Now()
	for _, w := range writers {
		r.expect[w]++
	}
}

// TestCommitDelayFillsTheGroup: expecting three writers back, the writer waits (here up to
// an hour) for all three, so their concurrent appends share one transaction.
func TestCommitDelayFillsTheGroup(t *testing.T) {
	db := openDelayed(t, time.Hour, 3)
	expectBack(db, "a", "b", "c")
	var wg sync.WaitGroup
	for i, writer := range []string{"a", "b", "c"} {
		wg.Go(func() {
			if err := appendFrom(t, db, writer, int64(i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if st := db.Stats(); st.Commits != 3 || st.CommitTransactions != 1 {
		t.Fatalf("%d commits in %d transactions, want 3 in 1", st.Commits, st.CommitTransactions)
	}
}

// TestCommitDelayNeverHoldsALoneWriter: one writer appending back to back is expected back
// after each commit, and its own next append is what the group waits for: each group has
// one commit and none is delayed, however long CommitDelay is.
func TestCommitDelayNeverHoldsALoneWriter(t *testing.T) {
	db := openDelayed(t, time.Hour, 3)
	for i := range 5 {
		if err := appendFrom(t, db, "a", int64(i)); err != nil {
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
	expectBack(db, "a", "b")
	done := make(chan error, 1)
	go func() { done <- appendFrom(t, db, "a", 1) }()
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
	expectBack(db, "a", "b")
	done := make(chan error, 1)
	go func() { done <- appendFrom(t, db, "a", 1) }()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("an append waiting in a group at Close committed")
	}
}

// TestCommitDelayExpectsOnlyPromptWriters: of a group's writers, the next group expects
// back those whose append came within CommitDelay of their previous answer (a closed
// loop), not one that came later, nor one without a name; it waits for the first and
// commits without the others.
func TestCommitDelayExpectsOnlyPromptWriters(t *testing.T) {
	w := bareWriter(time.Hour)
	now := w.db.Now()
	w.returns.answered["prompt"], w.returns.answered["late"] = now.Add(-time.Millisecond), now.Add(-3*time.Hour)
	w.noteAnswered([]appendPlan{
		{op: &op{batch: &Batch{Writer: "prompt"}, submitted: now}},
		{op: &op{batch: &Batch{Writer: "late"}, submitted: now}},
		{op: &op{batch: &Batch{}, submitted: now}},
	})
	if w.returns.expecting != 1 || w.returns.expect["prompt"] != 1 {
		t.Fatalf("expecting %d (%v), want the prompt writer only", w.returns.expecting, w.returns.expect)
	}
	w.ops <- oneRowOp(t, "other")
	go func() { w.ops <- oneRowOp(t, "prompt") }()
	done := gatherInBackground(w, func() *op { return <-w.ops })
	if n := gathered(t, done, "the group still waits for a writer that was not prompt"); n != 2 {
		t.Fatalf("gathered %d appends, want 2: the queued one and the prompt writer's", n)
	}
}

// TestCommitDelayCountsAppendsOfOneConnection: an HTTP/2 connection carries several
// clients, so two prompt appends of one writer in a group are expected back as two, and
// the next group waits for the second after the first came.
func TestCommitDelayCountsAppendsOfOneConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := bareWriter(time.Hour)
		now := w.db.Now()
		w.returns.answered["h2"] = now.Add(-time.Millisecond)
		prompt := appendPlan{op: &op{batch: &Batch{Writer: "h2"}, submitted: now}}
		w.noteAnswered([]appendPlan{prompt, prompt})
		if w.returns.expecting != 2 || w.returns.expect["h2"] != 2 {
			t.Fatalf("expecting %d (%v), want two appends of h2", w.returns.expecting, w.returns.expect)
		}
		done := gatherInBackground(w, func() *op { return oneRowOp(t, "h2") })
		synctest.Wait()
		select {
		case n := <-done:
			t.Fatalf("gathered %d appends before the second expected one came", n)
		default:
		}
		w.ops <- oneRowOp(t, "h2")
		if n := <-done; n != 2 {
			t.Fatalf("gathered %d appends, want 2", n)
		}
	})
}

// TestCommitDelayForgetsAnOldGroup: a group answered longer than CommitDelay ago is not
// expected back, so a later append commits without waiting.
func TestCommitDelayForgetsAnOldGroup(t *testing.T) {
	w := bareWriter(time.Hour)
	w.returns.expect["a"], w.returns.expect["b"], w.returns.expecting = 1, 1, 2
	w.returns.answeredAt = w.db.Now().Add(-2 * time.Hour)
	done := gatherInBackground(w, func() *op { return oneRowOp(t, "c") })
	if n := gathered(t, done, "the append still waits for a group answered two hours ago"); n != 1 {
		t.Fatalf("gathered %d appends, want 1", n)
	}
}

// gatherInBackground runs w.gather in a goroutine from the append first returns there, and
// sends the size of the group it returned.
func gatherInBackground(w *writer, first func() *op) <-chan int {
	done := make(chan int, 1)
	go func() {
		group, _ := w.gather(context.Background(), first())
		done <- len(group)
	}()
	return done
}

// gathered returns the group size sent on done, failing t with stuck if none came within
// a minute.
func gathered(t *testing.T, done <-chan int, stuck string) int {
	t.Helper()
	select {
	case n := <-done:
		return n
	case <-time.After(time.Minute):
		t.Fatal(stuck)
		return 0
	}
}

// bareWriter is a writer without a database, for gather alone.
func bareWriter(delay time.Duration) *writer {
	db := &DB{CommitDelay: delay, MaxGroupCommits: DefaultMaxGroupCommits, MaxGroupRows: DefaultMaxGroupRows, Now: time.Now}
	return &writer{db: db, ops: make(chan *op, 16), returns: newReturns()}
}

// oneRowOp is an append of one BIGINT row from writer, its record released with t.
func oneRowOp(t *testing.T, writer string) *op {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(1)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
	t.Cleanup(rec.Release)
	return &op{batch: &Batch{Table: "t", Record: rec, Writer: writer}, submitted: time.Now()}
}
