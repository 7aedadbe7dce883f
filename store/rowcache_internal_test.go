package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// groupOfTwenty commits one row to each of 20 tables, more than the writer caches
// appenders and prepared INSERTs for, as one group commit (the commit delay holds the
// group until it is full), with a NULL or without.
func groupOfTwenty(t *testing.T, null bool) {
	const n = 20
	db := NewDB(filepath.Join(t.TempDir(), "group.duckdb"))
	db.CommitDelay = time.Hour
	db.MaxGroupCommits = n
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for i := range n {
		if _, err := db.CreateTable(context.Background(), fmt.Sprint("t", i), []ColumnSpec{{Name: "n", Type: "BIGINT"}}); err != nil {
			t.Fatal(err)
		}
	}
	writers := make([]string, n)
	for i := range writers {
		writers[i] = fmt.Sprint("w", i)
	}
	expectBack(db, writers...) // so that the next group waits to be full
	before := db.Stats()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			info, err := db.Table(fmt.Sprint("t", i))
			if err != nil {
				t.Error(err)
				return
			}
			b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
			defer b.Release()
			if null {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(int64(i))
			}
			if _, err := db.Append(context.Background(), Batch{Table: info.Name, TableID: info.ID, SchemaVersion: info.Schema.Version, Record: b.NewRecordBatch(), Writer: writers[i]}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st := db.Stats()
	if got := st.CommitTransactions - before.CommitTransactions; got != 1 {
		t.Fatalf("%d commits took %d transactions, want 1 (a failed group is committed again commit by commit)", st.Commits-before.Commits, got)
	}
}

// TestGroupOfManySmallTablesCommitsOnce: a group's tables keep their prepared INSERTs
// (rows without NULLs) or appenders (with NULLs) until the group is done, however many
// they are; the caches are trimmed after it. Evicting during the group failed it (a
// closed statement) or crashed the writer (a nil appender).
func TestGroupOfManySmallTablesCommitsOnce(t *testing.T) {
	t.Run("prepared INSERTs", func(t *testing.T) { groupOfTwenty(t, false) })
	t.Run("appenders", func(t *testing.T) { groupOfTwenty(t, true) })
}

// rssMiB is this process's resident set after a garbage collection, in MiB.
func rssMiB(t *testing.T) float64 {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("needs /proc/self/statm:", err)
	}
	pages, _ := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}

// TestLargeValuesAreNotKeptBound: a 1-row commit of a 32 MiB value does not take a cached
// prepared INSERT, which would keep it bound until the statement is bound again or a
// catalog change drops it (4 such commits kept 128 MiB).
func TestLargeValuesAreNotKeptBound(t *testing.T) {
	ctx := context.Background()
	db := NewDB(filepath.Join(t.TempDir(), "retain.duckdb"))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const tables, size = 4, 32 << 20
	for i := range tables {
		if _, err := db.CreateTable(ctx, "big"+strconv.Itoa(i), []ColumnSpec{{Name: "s", Type: "VARCHAR"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.CreateTable(ctx, "other", []ColumnSpec{{Name: "n", Type: "BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	for i := range tables {
		info, _ := db.Table("big" + strconv.Itoa(i))
		b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
		b.Field(0).(*array.StringBuilder).Append(strings.Repeat(string(rune('a'+i)), size))
		rec := b.NewRecordBatch()
		b.Release()
		if _, err := db.Append(ctx, Batch{Table: info.Name, SchemaVersion: info.Schema.Version, Record: rec}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if _, err := db.sqlDB.ExecContext(ctx, "FORCE CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	afterCommits := rssMiB(t)
	// A catalog change drops the writer's cached statements.
	if _, err := db.AddColumn(ctx, "other", ColumnSpec{Name: "m", Type: "BIGINT"}); err != nil {
		t.Fatal(err)
	}
	if freed := afterCommits - rssMiB(t); freed > float64(tables*size>>20)/2 {
		t.Errorf("a catalog change freed %.0f MiB: cached statements kept the committed values bound", freed)
	}
}
