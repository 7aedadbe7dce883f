package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// TestSmallAppendsStoreWhatLargeOnesStore appends the same rows of every column type a
// DuckDB appender takes as commits of one row each (a row without NULLs is a prepared
// INSERT), as one small commit (appended, it holds NULLs) and inside one commit of more
// than a DuckDB vector (staged as an Arrow view), and checks that the tables hold the same
// values, NULLs and extremes included; and that a value outside the appender's range (the
// TIMESTAMP 'infinity') is stored as the view stores it, whichever path refuses it first.
func TestSmallAppendsStoreWhatLargeOnesStore(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	cols := []store.ColumnSpec{
		{Name: "b", Type: "BOOLEAN"}, {Name: "i1", Type: "TINYINT"}, {Name: "i2", Type: "SMALLINT"},
		{Name: "i4", Type: "INTEGER"}, {Name: "i8", Type: "BIGINT"}, {Name: "u1", Type: "UTINYINT"},
		{Name: "u2", Type: "USMALLINT"}, {Name: "u4", Type: "UINTEGER"}, {Name: "u8", Type: "UBIGINT"},
		{Name: "f4", Type: "FLOAT"}, {Name: "f8", Type: "DOUBLE"}, {Name: "s", Type: "VARCHAR"},
		{Name: "bl", Type: "BLOB"}, {Name: "d", Type: "DATE"}, {Name: "ts", Type: "TIMESTAMP"},
		{Name: "ts_s", Type: "TIMESTAMP_S"}, {Name: "ts_ms", Type: "TIMESTAMP_MS"},
		{Name: "ts_ns", Type: "TIMESTAMP_NS"}, {Name: "tstz", Type: "TIMESTAMPTZ"},
	}
	rows := []string{
		`{"b": true, "i1": -128, "i2": -32768, "i4": -2147483648, "i8": -9223372036854775808, "u1": 255, "u2": 65535,
		  "u4": 4294967295, "u8": 18446744073709551615, "f4": 1.5, "f8": -2.25e300, "s": "héllo\u0000wörld", "bl": "AAEC/w==",
		  "d": "1969-12-31", "ts": "1900-01-02T03:04:05.123456", "ts_s": "2262-01-01T00:00:01", "ts_ms": "1970-01-01T00:00:00.001",
		  "ts_ns": "2024-02-29T23:59:59.999999999", "tstz": "2024-06-01T12:00:00.5Z"}`,
		`{"b": false, "i1": 127, "i2": 32767, "i4": 2147483647, "i8": 9223372036854775807, "u1": 0, "u2": 0, "u4": 0, "u8": 0,
		  "f4": 0, "f8": 0, "s": "", "bl": "", "d": "0001-01-01", "ts": "1970-01-01T00:00:00", "ts_s": "1970-01-01T00:00:00",
		  "ts_ms": "1969-12-31T23:59:59.999", "ts_ns": "1970-01-01T00:00:00", "tstz": "1970-01-01T00:00:00Z"}`,
		`{}`,
	}
	filler := strings.Repeat(",{}", 2100)
	// 'infinity' as BIGINT microseconds: beyond the years the appender converts.
	infinity := `[{"ts": 9223372036854775807}]`
	tables := map[string][]string{
		"single": {"[" + rows[0] + "]", "[" + rows[1] + "]", "[" + rows[2] + "]", infinity},
		"small":  {"[" + strings.Join(rows, ",") + "]", infinity},
		"large":  {"[" + strings.Join(rows, ",") + filler + "]", infinity},
	}
	for name, bodies := range tables {
		info, err := db.CreateTable(ctx, name, cols)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range bodies {
			rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, info.Schema.Arrow(), strings.NewReader(j))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Append(ctx, store.Batch{Table: name, SchemaVersion: info.Schema.Version, Record: rec}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.CreateTable(ctx, "ts_only", cols[14:15]); err != nil {
		t.Fatal(err)
	}
	info, _ := db.Table("ts_only")
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, info.Schema.Arrow(), strings.NewReader(infinity))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, store.Batch{Table: "ts_only", SchemaVersion: info.Schema.Version, Record: rec}); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string]int64{
		`SELECT count(*) FROM small`:  4,
		`SELECT count(*) FROM single`: 4,
		`SELECT count(*) FROM (SELECT * FROM small EXCEPT ALL SELECT * FROM large)`:                           0,
		`SELECT count(*) FROM (SELECT * FROM single EXCEPT ALL SELECT * FROM large)`:                          0,
		`SELECT count(*) FROM ts_only WHERE ts = 'infinity'`:                                                  1,
		`SELECT count(*) FROM small WHERE ts = 'infinity'`:                                                    1,
		`SELECT count(*) FROM small WHERE s = 'héllo' || chr(0) || 'wörld' AND bl = '\x00\x01\x02\xFF'::BLOB`: 1,
	} {
		if got := readCount(t, db, query); got != want {
			t.Errorf("%s = %d, want %d", query, got, want)
		}
	}
}

func readCount(tb testing.TB, db *store.DB, query string) int64 {
	tb.Helper()
	var n int64
	err := db.Read(context.Background(), func(tx *store.ReadTx) error {
		return tx.QueryArrow(context.Background(), query, nil, func(rr array.RecordReader) error {
			for rr.Next() {
				n = rr.RecordBatch().Column(0).(*array.Int64).Value(0)
			}
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
