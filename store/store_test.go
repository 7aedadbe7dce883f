package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// recorder is a Publisher that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []store.Event
}

func (r *recorder) Publish(e store.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []store.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]store.Event(nil), r.events...)
}

// openDB opens a store on a new DuckDB file in t.TempDir() and closes it at cleanup.
func openDB(tb testing.TB, path string) (*store.DB, *recorder) {
	tb.Helper()
	if path == "" {
		path = filepath.Join(tb.TempDir(), "ducktail.duckdb")
	}
	rec := &recorder{}
	db := store.NewDB(path)
	db.Publisher = rec
	if err := db.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, rec
}

var weatherColumns = []store.ColumnSpec{
	{Name: "date", Type: "DATE"},
	{Name: "temp_max", Type: "DOUBLE"},
	{Name: "weather", Type: "VARCHAR"},
}

// weatherBatch builds n rows shaped for s, with temp_max = base+i.
func weatherBatch(s store.Schema, n int, base float64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s.Arrow())
	defer b.Release()
	for i := 0; i < n; i++ {
		for j, c := range s.Columns {
			switch c.Type {
			case store.TypeDate:
				b.Field(j).(*array.Date32Builder).Append(arrow.Date32(15340 + i))
			case store.TypeDouble:
				b.Field(j).(*array.Float64Builder).Append(base + float64(i))
			case store.TypeVarchar:
				b.Field(j).(*array.StringBuilder).Append("rain")
			case store.TypeBigint:
				b.Field(j).(*array.Int64Builder).Append(int64(base) + int64(i))
			default:
				b.Field(j).AppendNull()
			}
		}
	}
	return b.NewRecordBatch()
}

func appendRows(tb testing.TB, db *store.DB, table string, n int, base float64) store.Commit {
	tb.Helper()
	info, err := db.Table(table)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := db.Append(context.Background(), store.Batch{Table: table, SchemaVersion: info.Schema.Version, Record: weatherBatch(info.Schema, n, base)})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// readAll returns the rows of a table's view as float64 temp_max values via Arrow.
func readColumn(tb testing.TB, db *store.DB, query string) []float64 {
	tb.Helper()
	var out []float64
	err := db.Read(context.Background(), func(tx *store.ReadTx) error {
		return tx.QueryArrow(context.Background(), query, nil, func(rr array.RecordReader) error {
			for rr.Next() {
				col := rr.RecordBatch().Column(0).(*array.Float64)
				for i := 0; i < col.Len(); i++ {
					out = append(out, col.Value(i))
				}
			}
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestCancelledReadsLeaveNoOpenTransaction cancels reads at random moments, including
// during BEGIN, and checks that every reader connection still works afterwards.
func TestCancelledReadsLeaveNoOpenTransaction(t *testing.T) {
	db, _ := openDB(t, "")
	for i := range 600 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Duration(i%50) * time.Microsecond); cancel() }()
		db.Read(ctx, func(*store.ReadTx) error { return nil })
		cancel()
		if err := db.Read(context.Background(), func(*store.ReadTx) error { return nil }); err != nil {
			t.Fatalf("after %d cancelled reads: %v", i+1, err)
		}
	}
}

func TestAppendRefusesARecreatedTable(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	old, _ := db.CreateTable(ctx, "weather", weatherColumns)
	rec := weatherBatch(old.Schema, 1, 1)
	db.DropTable(ctx, "weather")
	db.CreateTable(ctx, "weather", weatherColumns)
	_, err := db.Append(ctx, store.Batch{Table: "weather", TableID: old.ID, SchemaVersion: 1, Record: rec})
	if !errors.Is(err, store.ErrSchemaChanged) {
		t.Fatalf("append shaped for the dropped table: %v", err)
	}
}
