package snapshot_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

// openDB opens a store on a new DuckDB file in t.TempDir() and closes it at cleanup.
func openDB(tb testing.TB) *store.DB {
	tb.Helper()
	db := store.NewDB(filepath.Join(tb.TempDir(), "ducktail.duckdb"))
	if err := db.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// testCursor stands in for the stream package's cursor codec: readable and unique per
// position.
func testCursor(p store.Position) string {
	return fmt.Sprintf("c%d.%s.%d", p.TableID, p.Activation, p.Seq)
}

func newReader(tb testing.TB, db *store.DB) *snapshot.Reader {
	tb.Helper()
	r := snapshot.NewReader(db)
	r.Cursor = testCursor
	r.Logger = slog.New(slog.DiscardHandler)
	if err := r.Open(); err != nil {
		tb.Fatal(err)
	}
	return r
}

func allowAll(string) bool { return true }

// weatherRow is one row of testdata/seattle-weather.csv.
type weatherRow struct {
	date                                  string
	precipitation, tempMax, tempMin, wind float64
	weather                               string
}

var weatherColumns = []store.ColumnSpec{
	{Name: "date", Type: "DATE"},
	{Name: "precipitation", Type: "DOUBLE"},
	{Name: "temp_max", Type: "DOUBLE"},
	{Name: "temp_min", Type: "DOUBLE"},
	{Name: "wind", Type: "DOUBLE"},
	{Name: "weather", Type: "VARCHAR"},
}

// readWeather reads the 1,461 rows of testdata/seattle-weather.csv (NOAA, via
// vega-datasets; see testdata/README.md).
func readWeather(tb testing.TB) []weatherRow {
	tb.Helper()
	f, err := os.Open("../testdata/seattle-weather.csv")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		tb.Fatal(err)
	}
	rows := make([]weatherRow, 0, len(recs)-1)
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
	for _, r := range recs[1:] {
		rows = append(rows, weatherRow{r[0], num(r[1]), num(r[2]), num(r[3]), num(r[4]), r[5]})
	}
	return rows
}

// loadWeather creates table name from the weather rows, appended in commits of at most
// perCommit rows, and returns the rows and the table after the last commit.
func loadWeather(tb testing.TB, db *store.DB, name string, perCommit int) ([]weatherRow, store.TableInfo) {
	tb.Helper()
	ctx := context.Background()
	info, err := db.CreateTable(ctx, name, weatherColumns)
	if err != nil {
		tb.Fatal(err)
	}
	rows := readWeather(tb)
	for start := 0; start < len(rows); start += perCommit {
		end := min(start+perCommit, len(rows))
		b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
		for _, r := range rows[start:end] {
			d, err := time.Parse(time.DateOnly, r.date)
			if err != nil {
				tb.Fatal(err)
			}
			b.Field(0).(*array.Date32Builder).Append(arrow.Date32FromTime(d))
			b.Field(1).(*array.Float64Builder).Append(r.precipitation)
			b.Field(2).(*array.Float64Builder).Append(r.tempMax)
			b.Field(3).(*array.Float64Builder).Append(r.tempMin)
			b.Field(4).(*array.Float64Builder).Append(r.wind)
			b.Field(5).(*array.StringBuilder).Append(r.weather)
		}
		rec := b.NewRecordBatch()
		b.Release()
		if _, err := db.Append(ctx, store.Batch{Table: name, SchemaVersion: info.Schema.Version, Record: rec}); err != nil {
			tb.Fatal(err)
		}
	}
	info, err = db.Table(name)
	if err != nil {
		tb.Fatal(err)
	}
	return rows, info
}

// appendInts commits one batch of n rows (batch, i) = (batch, 0…n-1) to a table with
// columns batch BIGINT, i BIGINT.
func appendInts(tb testing.TB, db *store.DB, table string, batch int64, n int) store.Commit {
	tb.Helper()
	info, err := db.Table(table)
	if err != nil {
		tb.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(batch)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	c, err := db.Append(context.Background(), store.Batch{Table: table, SchemaVersion: info.Schema.Version, Record: b.NewRecordBatch()})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// wantCode fails unless err is a *store.Error with the given code.
func wantCode(tb testing.TB, what string, err error, code store.Code) *store.Error {
	tb.Helper()
	se, ok := err.(*store.Error)
	if !ok || se.Code != code {
		tb.Fatalf("%s: err = %v (%T), want a *store.Error with code %s", what, err, err, code)
	}
	return se
}
