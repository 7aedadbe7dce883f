package snapshot_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

// jsonBody is the JSON shape of Table and Query results.
type jsonBody struct {
	Columns []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"columns"`
	Rows    []map[string]any  `json:"rows"`
	Cursor  string            `json:"cursor"`
	Cursors map[string]string `json:"cursors"`
}

// headFirstWriter records whether head was called before the first byte was written.
type headFirstWriter struct {
	bytes.Buffer
	head       store.Position
	headCalls  int
	writeEarly bool
}

func (w *headFirstWriter) Write(p []byte) (int, error) {
	if w.headCalls == 0 {
		w.writeEarly = true
	}
	return w.Buffer.Write(p)
}

func (w *headFirstWriter) setHead(p store.Position) {
	w.head = p
	w.headCalls++
}

// decodeArrow reads an Arrow IPC stream into one record per message.
func decodeArrow(tb testing.TB, body []byte) (*arrow.Schema, []arrow.RecordBatch) {
	tb.Helper()
	rd, err := ipc.NewReader(bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer rd.Release()
	var recs []arrow.RecordBatch
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rd.Err(); err != nil {
		tb.Fatal(err)
	}
	return rd.Schema(), recs
}

// sameFields reports whether two schemas have the same field names and types, ignoring
// metadata (Parquet readers add PARQUET:field_id).
func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if a.Field(i).Name != b.Field(i).Name || !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

func decodeParquet(tb testing.TB, body []byte) arrow.Table {
	tb.Helper()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(body), parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		tb.Fatal(err)
	}
	return tbl
}

// weatherFromRecords converts records of the weather schema back to rows.
func weatherFromRecords(recs []arrow.RecordBatch) []weatherRow {
	var rows []weatherRow
	for _, rec := range recs {
		for i := range int(rec.NumRows()) {
			rows = append(rows, weatherRow{
				date:          rec.Column(0).(*array.Date32).Value(i).ToTime().Format(time.DateOnly),
				precipitation: rec.Column(1).(*array.Float64).Value(i),
				tempMax:       rec.Column(2).(*array.Float64).Value(i),
				tempMin:       rec.Column(3).(*array.Float64).Value(i),
				wind:          rec.Column(4).(*array.Float64).Value(i),
				weather:       rec.Column(5).(*array.String).Value(i),
			})
		}
	}
	return rows
}

func weatherFromObject(tb testing.TB, o map[string]any) weatherRow {
	tb.Helper()
	f := func(k string) float64 {
		v, ok := o[k].(float64)
		if !ok {
			tb.Fatalf("%s = %v (%T), want a number", k, o[k], o[k])
		}
		return v
	}
	return weatherRow{o["date"].(string), f("precipitation"), f("temp_max"), f("temp_min"), f("wind"), o["weather"].(string)}
}

func compareWeather(tb testing.TB, format string, got, want []weatherRow) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: %d rows, want %d", format, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			tb.Fatalf("%s: row %d = %+v, want %+v", format, i, got[i], want[i])
		}
	}
}

// TestTableFormats snapshots the real Seattle weather table in every format and decodes
// each back with an independent reader.
func TestTableFormats(t *testing.T) {
	db := openDB(t)
	want, info := loadWeather(t, db, "weather", 400)
	if info.Head.Seq != 4 {
		t.Fatalf("head seq after loading = %d, want 4", info.Head.Seq)
	}
	r := newReader(t, db)
	ctx := context.Background()
	for _, f := range []snapshot.Format{snapshot.FormatArrow, snapshot.FormatJSON, snapshot.FormatNDJSON, snapshot.FormatCSV, snapshot.FormatParquet} {
		w := &headFirstWriter{}
		if err := r.Table(ctx, "WEATHER", f, w, w.setHead); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if w.headCalls != 1 || w.writeEarly {
			t.Fatalf("%s: head called %d times, bytes before head: %v; want once, before any byte", f, w.headCalls, w.writeEarly)
		}
		if w.head != info.Head {
			t.Fatalf("%s: head = %+v, want %+v", f, w.head, info.Head)
		}
		body := w.Bytes()
		var got []weatherRow
		switch f {
		case snapshot.FormatArrow:
			schema, recs := decodeArrow(t, body)
			if !schema.Equal(info.Schema.Arrow()) {
				t.Fatalf("arrow schema = %s, want %s", schema, info.Schema.Arrow())
			}
			got = weatherFromRecords(recs)
		case snapshot.FormatParquet:
			tbl := decodeParquet(t, body)
			if !sameFields(tbl.Schema(), info.Schema.Arrow()) {
				t.Fatalf("parquet schema = %s, want %s", tbl.Schema(), info.Schema.Arrow())
			}
			tr := array.NewTableReader(tbl, 1000)
			var recs []arrow.RecordBatch
			for tr.Next() {
				rec := tr.RecordBatch()
				rec.Retain()
				recs = append(recs, rec)
			}
			got = weatherFromRecords(recs)
		case snapshot.FormatJSON:
			var b jsonBody
			if err := json.Unmarshal(body, &b); err != nil {
				t.Fatal(err)
			}
			var cols []string
			for _, c := range b.Columns {
				cols = append(cols, c.Name+" "+c.Type)
			}
			if s := strings.Join(cols, ", "); s != "date DATE, precipitation DOUBLE, temp_max DOUBLE, temp_min DOUBLE, wind DOUBLE, weather VARCHAR" {
				t.Fatalf("json columns = %s", s)
			}
			if b.Cursor != testCursor(info.Head) {
				t.Fatalf("json cursor = %q, want %q", b.Cursor, testCursor(info.Head))
			}
			for _, o := range b.Rows {
				got = append(got, weatherFromObject(t, o))
			}
		case snapshot.FormatNDJSON:
			sc := bufio.NewScanner(bytes.NewReader(body))
			for sc.Scan() {
				var o map[string]any
				if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
					t.Fatalf("ndjson line %q: %v", sc.Text(), err)
				}
				got = append(got, weatherFromObject(t, o))
			}
		case snapshot.FormatCSV:
			if !bytes.HasSuffix(body, []byte("\r\n")) {
				t.Fatalf("csv does not end with CRLF: %q", body[len(body)-10:])
			}
			recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if h := strings.Join(recs[0], ","); h != "date,precipitation,temp_max,temp_min,wind,weather" {
				t.Fatalf("csv header = %s", h)
			}
			for _, rec := range recs[1:] {
				num := func(s string) float64 {
					v, err := strconv.ParseFloat(s, 64)
					if err != nil {
						t.Fatal(err)
					}
					return v
				}
				got = append(got, weatherRow{rec[0], num(rec[1]), num(rec[2]), num(rec[3]), num(rec[4]), rec[5]})
			}
		}
		compareWeather(t, string(f), got, want)
	}
}

func TestTableEmptyAndUnknown(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	info, err := db.CreateTable(ctx, "empty", weatherColumns)
	if err != nil {
		t.Fatal(err)
	}
	r := newReader(t, db)
	want := map[snapshot.Format]func([]byte){
		snapshot.FormatArrow: func(body []byte) {
			schema, recs := decodeArrow(t, body)
			if !schema.Equal(info.Schema.Arrow()) || len(recs) != 0 {
				t.Fatalf("arrow: schema %s, %d records; want %s and none", schema, len(recs), info.Schema.Arrow())
			}
		},
		snapshot.FormatParquet: func(body []byte) {
			tbl := decodeParquet(t, body)
			if !sameFields(tbl.Schema(), info.Schema.Arrow()) || tbl.NumRows() != 0 {
				t.Fatalf("parquet: schema %s, %d rows; want %s and none", tbl.Schema(), tbl.NumRows(), info.Schema.Arrow())
			}
		},
		snapshot.FormatJSON: func(body []byte) {
			wantBody := `{"columns":[{"name":"date","type":"DATE"},{"name":"precipitation","type":"DOUBLE"},{"name":"temp_max","type":"DOUBLE"},` +
				`{"name":"temp_min","type":"DOUBLE"},{"name":"wind","type":"DOUBLE"},{"name":"weather","type":"VARCHAR"}],"rows":[],"cursor":"` +
				testCursor(info.Head) + "\"}\n"
			if string(body) != wantBody {
				t.Fatalf("json:\n got %s\nwant %s", body, wantBody)
			}
		},
		snapshot.FormatNDJSON: func(body []byte) {
			if len(body) != 0 {
				t.Fatalf("ndjson = %q, want empty", body)
			}
		},
		snapshot.FormatCSV: func(body []byte) {
			if string(body) != "date,precipitation,temp_max,temp_min,wind,weather\r\n" {
				t.Fatalf("csv = %q, want the header only", body)
			}
		},
	}
	for f, check := range want {
		var pos store.Position
		var buf bytes.Buffer
		if err := r.Table(ctx, "empty", f, &buf, func(p store.Position) { pos = p }); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if pos.Seq != 0 || pos.TableID != info.ID || pos.Activation != info.Head.Activation {
			t.Fatalf("%s: head = %+v, want seq 0 of %+v", f, pos, info.Head)
		}
		check(buf.Bytes())
	}

	// Without a cursor codec the JSON bodies carry no cursor members.
	bare := snapshot.NewReader(db)
	var plain bytes.Buffer
	if err := bare.Table(ctx, "empty", snapshot.FormatJSON, &plain, nil); err != nil || !strings.HasSuffix(plain.String(), `"rows":[]}`+"\n") {
		t.Fatalf("json without Cursor: %v, %s", err, plain.String())
	}
	res, err := bare.Query(ctx, "SELECT count(*) AS n FROM empty", nil, snapshot.FormatJSON, allowAll)
	if err != nil || string(res.Body) != `{"columns":[{"name":"n","type":"BIGINT"}],"rows":[{"n":0}]}`+"\n" || res.Cursors["empty"] != info.Head {
		t.Fatalf("query without Cursor: %v, %s, %v", err, res.Body, res.Cursors)
	}

	called := false
	var buf bytes.Buffer
	err = r.Table(ctx, "nope", snapshot.FormatJSON, &buf, func(store.Position) { called = true })
	wantCode(t, "unknown table", err, store.CodeNotFound)
	if called || buf.Len() != 0 {
		t.Fatalf("unknown table: head called %v, %d bytes written; want neither", called, buf.Len())
	}
	err = r.Table(ctx, "empty", "xml", &buf, nil)
	wantCode(t, "unknown format", err, store.CodeInvalid)
}

// allTypesTable creates a table with one column of every supported type and four rows of
// edge values, and returns it.
func allTypesTable(t *testing.T, db *store.DB) store.TableInfo {
	t.Helper()
	ctx := context.Background()
	info, err := db.CreateTable(ctx, "types", []store.ColumnSpec{
		{Name: "b", Type: "BOOLEAN"}, {Name: "i", Type: "BIGINT"}, {Name: "u", Type: "UBIGINT"},
		{Name: "f", Type: "FLOAT"}, {Name: "d", Type: "DOUBLE"}, {Name: "m", Type: "DECIMAL(18,3)"},
		{Name: "s", Type: "VARCHAR"}, {Name: "x", Type: "BLOB"}, {Name: "dt", Type: "DATE"},
		{Name: "tm", Type: "TIME"}, {Name: "ts", Type: "TIMESTAMP"}, {Name: "tz", Type: "TIMESTAMPTZ"},
	})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
	defer b.Release()
	bl := b.Field(0).(*array.BooleanBuilder)
	i64 := b.Field(1).(*array.Int64Builder)
	u64 := b.Field(2).(*array.Uint64Builder)
	f32 := b.Field(3).(*array.Float32Builder)
	f64 := b.Field(4).(*array.Float64Builder)
	dec := b.Field(5).(*array.Decimal128Builder)
	str := b.Field(6).(*array.StringBuilder)
	bin := b.Field(7).(*array.BinaryBuilder)
	d32 := b.Field(8).(*array.Date32Builder)
	t64 := b.Field(9).(*array.Time64Builder)
	ts := b.Field(10).(*array.TimestampBuilder)
	tz := b.Field(11).(*array.TimestampBuilder)
	// Row 1: extremes and characters that need quoting.
	bl.Append(true)
	i64.Append(math.MinInt64)
	u64.Append(math.MaxUint64)
	f32.Append(0.1)
	f64.Append(1e21)
	dec.Append(decimal128.FromI64(1500))
	str.Append("say \"hi\", bye\r\n")
	bin.Append([]byte{0, 1, 2})
	d32.Append(15340) // 2012-01-01
	t64.Append(45296789000)
	ts.Append(1700000000123456)
	tz.Append(0)
	// Row 2: all NULL.
	for i := range b.Fields() {
		b.Field(i).AppendNull()
	}
	// Row 3: the other side.
	bl.Append(false)
	i64.Append(42)
	u64.Append(0)
	f32.Append(float32(math.Inf(-1)))
	f64.Append(math.NaN())
	dec.Append(decimal128.FromBigInt(big.NewInt(-1)))
	str.Append("")
	bin.Append([]byte{})
	d32.Append(-1)
	t64.Append(0)
	ts.Append(-1)
	tz.AppendNull()
	// Row 4: a string with a leading space and a line separator; the rest NULL.
	for i := range b.Fields() {
		if i == 6 {
			str.Append(" x\u2028y")
		} else {
			b.Field(i).AppendNull()
		}
	}
	if _, err := db.Append(ctx, store.Batch{Table: "types", SchemaVersion: 1, Record: b.NewRecordBatch()}); err != nil {
		t.Fatal(err)
	}
	info, err = db.Table("types")
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestTableExactText pins the exact bytes of the text formats for every column type.
func TestTableExactText(t *testing.T) {
	db := openDB(t)
	info := allTypesTable(t, db)
	r := newReader(t, db)
	rows := []string{
		`{"b":true,"i":-9223372036854775808,"u":18446744073709551615,"f":0.1,"d":1e+21,"m":1.500,"s":"say \"hi\", bye\r\n","x":"AAEC","dt":"2012-01-01","tm":"12:34:56.789","ts":"2023-11-14T22:13:20.123456","tz":"1970-01-01T00:00:00Z"}`,
		`{"b":null,"i":null,"u":null,"f":null,"d":null,"m":null,"s":null,"x":null,"dt":null,"tm":null,"ts":null,"tz":null}`,
		`{"b":false,"i":42,"u":0,"f":"-Infinity","d":"NaN","m":-0.001,"s":"","x":"","dt":"1969-12-31","tm":"00:00:00","ts":"1969-12-31T23:59:59.999999","tz":null}`,
		`{"b":null,"i":null,"u":null,"f":null,"d":null,"m":null,"s":" x\u2028y","x":null,"dt":null,"tm":null,"ts":null,"tz":null}`,
	}
	want := map[snapshot.Format]string{
		snapshot.FormatJSON: `{"columns":[{"name":"b","type":"BOOLEAN"},{"name":"i","type":"BIGINT"},{"name":"u","type":"UBIGINT"},` +
			`{"name":"f","type":"FLOAT"},{"name":"d","type":"DOUBLE"},{"name":"m","type":"DECIMAL(18,3)"},{"name":"s","type":"VARCHAR"},` +
			`{"name":"x","type":"BLOB"},{"name":"dt","type":"DATE"},{"name":"tm","type":"TIME"},{"name":"ts","type":"TIMESTAMP"},` +
			`{"name":"tz","type":"TIMESTAMPTZ"}],"rows":[` + strings.Join(rows, ",") + `],"cursor":"` + testCursor(info.Head) + "\"}\n",
		snapshot.FormatNDJSON: strings.Join(rows, "\n") + "\n",
		snapshot.FormatCSV: "b,i,u,f,d,m,s,x,dt,tm,ts,tz\r\n" +
			"true,-9223372036854775808,18446744073709551615,0.1,1e+21,1.500,\"say \"\"hi\"\", bye\r\n\",AAEC,2012-01-01,12:34:56.789,2023-11-14T22:13:20.123456,1970-01-01T00:00:00Z\r\n" +
			",,,,,,,,,,,\r\n" +
			"false,42,0,-Infinity,NaN,-0.001,\"\",\"\",1969-12-31,00:00:00,1969-12-31T23:59:59.999999,\r\n" +
			",,,,,,\" x\u2028y\",,,,,\r\n",
	}
	for f, w := range want {
		var buf bytes.Buffer
		if err := r.Table(context.Background(), "types", f, &buf, nil); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if buf.String() != w {
			t.Errorf("%s:\n got %q\nwant %q", f, buf.String(), w)
		}
	}
	// CSV as encoding/csv reads it: NULL and "" both come back empty, the rest exact.
	var buf bytes.Buffer
	if err := r.Table(context.Background(), "types", snapshot.FormatCSV, &buf, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := recs[1][6]; got != "say \"hi\", bye\n" && got != "say \"hi\", bye\r\n" {
		t.Fatalf("csv string read back as %q", got)
	}
}

// TestTableBinaryFormatsExact reads the edge-value table through Arrow IPC and Parquet and
// checks both carry exactly the types of Type.Arrow and the same values.
func TestTableBinaryFormatsExact(t *testing.T) {
	db := openDB(t)
	info := allTypesTable(t, db)
	r := newReader(t, db)
	var ab, pb bytes.Buffer
	if err := r.Table(context.Background(), "types", snapshot.FormatArrow, &ab, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Table(context.Background(), "types", snapshot.FormatParquet, &pb, nil); err != nil {
		t.Fatal(err)
	}
	schema, recs := decodeArrow(t, ab.Bytes())
	if !schema.Equal(info.Schema.Arrow()) {
		t.Fatalf("arrow schema = %s, want %s", schema, info.Schema.Arrow())
	}
	tbl := decodeParquet(t, pb.Bytes())
	if !sameFields(tbl.Schema(), info.Schema.Arrow()) {
		t.Fatalf("parquet schema = %s, want %s", tbl.Schema(), info.Schema.Arrow())
	}
	if len(recs) != 1 || recs[0].NumRows() != 4 || tbl.NumRows() != 4 {
		t.Fatalf("arrow: %d records; parquet: %d rows; want 1 record of 4 rows, 4 rows", len(recs), tbl.NumRows())
	}
	for c := range int(tbl.NumCols()) {
		chunks := tbl.Column(c).Data().Chunks()
		if len(chunks) != 1 {
			t.Fatalf("parquet column %d has %d chunks", c, len(chunks))
		}
		got, want := chunks[0], recs[0].Column(c)
		for i := range want.Len() {
			if got.IsNull(i) != want.IsNull(i) || got.ValueStr(i) != want.ValueStr(i) {
				t.Errorf("column %s row %d: parquet %s, arrow %s", schema.Field(c).Name, i, got.ValueStr(i), want.ValueStr(i))
			}
		}
	}
	if v := recs[0].Column(1).(*array.Int64).Value(0); v != math.MinInt64 {
		t.Fatalf("arrow i[0] = %d, want MinInt64", v)
	}
}

// TestSnapshotAgreesWithHeadUnderConcurrentCommits commits batches of known rows while
// snapshots and queries run, and checks that each read's rows are exactly the commits up
// to the head position it returned.
func TestSnapshotAgreesWithHeadUnderConcurrentCommits(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, "ticks", []store.ColumnSpec{{Name: "batch", Type: "BIGINT"}, {Name: "i", Type: "BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	const perCommit = 37
	r := newReader(t, db)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	appendErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		for k := int64(1); ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			c, err := appendTicks(db, k, perCommit)
			if err == nil && c.Position.Seq != k {
				err = fmt.Errorf("commit %d got seq %d", k, c.Position.Seq)
			}
			if err != nil {
				appendErr <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		select {
		case err := <-appendErr:
			t.Fatal(err)
		default:
		}
	}()
	heads := map[int64]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(heads) < 10 && time.Now().Before(deadline) {
		// The whole table through Table.
		var buf bytes.Buffer
		var head store.Position
		if err := r.Table(ctx, "ticks", snapshot.FormatArrow, &buf, func(p store.Position) { head = p }); err != nil {
			t.Fatal(err)
		}
		_, recs := decodeArrow(t, buf.Bytes())
		counts := map[int64]int{}
		for _, rec := range recs {
			col := rec.Column(0).(*array.Int64)
			for i := range col.Len() {
				counts[col.Value(i)]++
			}
		}
		checkBatches(t, "Table", counts, head.Seq, perCommit)
		heads[head.Seq] = true

		// An aggregate through Query.
		res, err := r.Query(ctx, "SELECT batch, count(*) AS n FROM ticks GROUP BY batch", nil, snapshot.FormatJSON, allowAll)
		if err != nil {
			t.Fatal(err)
		}
		var b jsonBody
		if err := json.Unmarshal(res.Body, &b); err != nil {
			t.Fatal(err)
		}
		counts = map[int64]int{}
		for _, row := range b.Rows {
			counts[int64(row["batch"].(float64))] = int(row["n"].(float64))
		}
		pos, ok := res.Cursors["ticks"]
		if !ok || b.Cursors["ticks"] != testCursor(pos) {
			t.Fatalf("query cursors = %v, body cursors = %v", res.Cursors, b.Cursors)
		}
		checkBatches(t, "Query", counts, pos.Seq, perCommit)
		heads[pos.Seq] = true
	}
	if len(heads) < 10 {
		t.Fatalf("reads saw only %d distinct heads; commits did not run concurrently", len(heads))
	}
}

func appendTicks(db *store.DB, batch int64, n int) (store.Commit, error) {
	info, err := db.Table("ticks")
	if err != nil {
		return store.Commit{}, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(batch)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	return db.Append(context.Background(), store.Batch{Table: "ticks", SchemaVersion: info.Schema.Version, Record: b.NewRecordBatch()})
}

// checkBatches fails unless counts holds exactly batches 1…seq, each with perCommit rows.
func checkBatches(t *testing.T, what string, counts map[int64]int, seq int64, perCommit int) {
	t.Helper()
	if int64(len(counts)) != seq {
		t.Fatalf("%s: rows of %d commits, head seq %d", what, len(counts), seq)
	}
	for k := int64(1); k <= seq; k++ {
		if counts[k] != perCommit {
			t.Fatalf("%s: commit %d has %d rows, want %d (head seq %d)", what, k, counts[k], perCommit, seq)
		}
	}
}

func TestQueryFormatsAndCursors(t *testing.T) {
	db := openDB(t)
	rows, weather := loadWeather(t, db, "weather", 1000)
	if _, err := db.CreateTable(context.Background(), "ticks", []store.ColumnSpec{{Name: "batch", Type: "BIGINT"}, {Name: "i", Type: "BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	appendInts(t, db, "ticks", 7, 3)
	ticks, _ := db.Table("ticks")
	var want []weatherRow
	for _, r := range rows {
		if r.weather == "sun" && r.tempMax > 30 {
			want = append(want, r)
		}
	}
	if len(want) < 10 {
		t.Fatalf("only %d hot sunny days in the data set", len(want))
	}
	const q = `SELECT w.* FROM weather w WHERE weather = ? AND temp_max > $2 AND EXISTS (SELECT 1 FROM main.ticks WHERE batch = 7) ORDER BY date`
	params := []any{"sun", json.Number("30")}
	r := newReader(t, db)
	wantCursors := map[string]store.Position{"weather": weather.Head, "ticks": ticks.Head}
	for _, f := range []snapshot.Format{snapshot.FormatArrow, snapshot.FormatJSON, snapshot.FormatNDJSON, snapshot.FormatCSV, snapshot.FormatParquet} {
		res, err := r.Query(context.Background(), q, params, f, allowAll)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if res.ContentType != f.ContentType() {
			t.Fatalf("%s: content type %q", f, res.ContentType)
		}
		if len(res.Cursors) != 2 || res.Cursors["weather"] != wantCursors["weather"] || res.Cursors["ticks"] != wantCursors["ticks"] {
			t.Fatalf("%s: cursors = %+v, want %+v", f, res.Cursors, wantCursors)
		}
		var got []weatherRow
		switch f {
		case snapshot.FormatArrow:
			_, recs := decodeArrow(t, res.Body)
			got = weatherFromRecords(recs)
		case snapshot.FormatParquet:
			tr := array.NewTableReader(decodeParquet(t, res.Body), 100)
			var recs []arrow.RecordBatch
			for tr.Next() {
				rec := tr.RecordBatch()
				rec.Retain()
				recs = append(recs, rec)
			}
			got = weatherFromRecords(recs)
		case snapshot.FormatJSON:
			var b jsonBody
			if err := json.Unmarshal(res.Body, &b); err != nil {
				t.Fatal(err)
			}
			wantJSON := map[string]string{"weather": testCursor(weather.Head), "ticks": testCursor(ticks.Head)}
			if fmt.Sprint(b.Cursors) != fmt.Sprint(wantJSON) || b.Cursor != "" {
				t.Fatalf("json cursors = %v, cursor %q; want %v", b.Cursors, b.Cursor, wantJSON)
			}
			for _, o := range b.Rows {
				got = append(got, weatherFromObject(t, o))
			}
		case snapshot.FormatNDJSON:
			for line := range strings.SplitSeq(strings.TrimSuffix(string(res.Body), "\n"), "\n") {
				var o map[string]any
				if err := json.Unmarshal([]byte(line), &o); err != nil {
					t.Fatal(err)
				}
				got = append(got, weatherFromObject(t, o))
			}
		case snapshot.FormatCSV:
			recs, err := csv.NewReader(bytes.NewReader(res.Body)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs[1:] {
				var n [4]float64
				for i := range n {
					if n[i], err = strconv.ParseFloat(rec[i+1], 64); err != nil {
						t.Fatal(err)
					}
				}
				got = append(got, weatherRow{rec[0], n[0], n[1], n[2], n[3], rec[5]})
			}
		}
		compareWeather(t, string(f), got, want)
	}

	// A query reading no table has no cursors, and "cursors":{} in JSON.
	res, err := r.Query(context.Background(), "SELECT 1 AS one, 'a' AS one", nil, snapshot.FormatJSON, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	if w := `{"columns":[{"name":"one","type":"INTEGER"},{"name":"one_1","type":"VARCHAR"}],"rows":[{"one":1,"one_1":"a"}],"cursors":{}}` + "\n"; string(res.Body) != w || len(res.Cursors) != 0 {
		t.Fatalf("no-table query: %s (cursors %v), want %s", res.Body, res.Cursors, w)
	}
}

func TestQueryParams(t *testing.T) {
	db := openDB(t)
	r := newReader(t, db)
	ctx := context.Background()
	res, err := r.Query(ctx, "SELECT ? + 1 AS i, typeof($1) AS it, $2 * 2 AS f, $3 AS e, $4 AS s, NOT $5 AS b, $6 IS NULL AS n, $7 AS u",
		[]any{json.Number("41"), json.Number("2.25"), json.Number("1e3"), "héllo", true, nil, json.Number("18446744073709551615")},
		snapshot.FormatJSON, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	want := `"rows":[{"i":42,"it":"BIGINT","f":4.5,"e":1000,"s":"héllo","b":false,"n":true,"u":18446744073709551615}]`
	if !strings.Contains(string(res.Body), want) {
		t.Fatalf("body = %s, want it to hold %s", res.Body, want)
	}
	bad := []struct {
		sql    string
		params []any
	}{
		{"SELECT ?", nil},
		{"SELECT ?", []any{"a", "b"}},
		{"SELECT $2", []any{"a"}},
		{"SELECT ?", []any{[]any{1}}},
		{"SELECT ?", []any{map[string]any{"a": 1}}},
		{"SELECT ?", []any{json.Number("12abc")}},
		{"SELECT $name", []any{"a"}},
	}
	for _, c := range bad {
		_, err := r.Query(ctx, c.sql, c.params, snapshot.FormatJSON, allowAll)
		wantCode(t, fmt.Sprintf("%s with %v", c.sql, c.params), err, store.CodeInvalid)
	}
}

func TestQueryDuckDBErrors(t *testing.T) {
	db := openDB(t)
	loadWeather(t, db, "weather", 2000)
	r := newReader(t, db)
	cases := []struct {
		sql  string
		code store.Code
		msg  string
	}{
		{"SELECT nope FROM weather", store.CodeUnprocessable, "Binder Error"},
		{"SELECT 'x'::INTEGER", store.CodeUnprocessable, "Conversion Error"},
		{"SELECT no_such_function(1)", store.CodeUnprocessable, "Catalog Error"},
		{"SELEC 1", store.CodeInvalid, "syntax error"},
		{"", store.CodeInvalid, "empty"},
		{"  -- just a comment\n", store.CodeInvalid, "empty"},
	}
	for _, c := range cases {
		_, err := r.Query(context.Background(), c.sql, nil, snapshot.FormatJSON, allowAll)
		se := wantCode(t, c.sql, err, c.code)
		if !strings.Contains(se.Message, c.msg) {
			t.Errorf("%q: message %q, want it to mention %q", c.sql, se.Message, c.msg)
		}
	}
	if _, err := r.Query(context.Background(), "SELECT 1", nil, "xml", allowAll); store.ErrorCode(err) != store.CodeInvalid {
		t.Fatalf("unknown format: %v, want CodeInvalid", err)
	}
}

func TestQueryTimeout(t *testing.T) {
	db := openDB(t)
	loadWeather(t, db, "weather", 2000)
	r := newReader(t, db)
	r.QueryTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := r.Query(context.Background(), "SELECT count(*) FROM range(10000000000)", nil, snapshot.FormatJSON, allowAll)
	se := wantCode(t, "long query", err, store.CodeTimeout)
	if !strings.Contains(se.Message, "300ms") {
		t.Fatalf("message %q does not name the limit", se.Message)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the query was interrupted after %s, want about 300ms", d)
	}
	// The reader connection is usable afterwards.
	r.QueryTimeout = 0
	res, err := r.Query(context.Background(), "SELECT count(*) AS n FROM weather", nil, snapshot.FormatJSON, allowAll)
	if err != nil || !strings.Contains(string(res.Body), `"rows":[{"n":1461}]`) {
		t.Fatalf("after the timeout: %v, %s", err, res.Body)
	}

	// A cancelled request is the caller's error, not a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = r.Query(ctx, "SELECT count(*) FROM range(10000000000)", nil, snapshot.FormatJSON, allowAll)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled request: %v, want context.DeadlineExceeded", err)
	}
}

func TestQueryTooLarge(t *testing.T) {
	db := openDB(t)
	r := newReader(t, db)
	r.MaxResultBytes = 64 << 10
	for _, f := range []snapshot.Format{snapshot.FormatArrow, snapshot.FormatJSON, snapshot.FormatNDJSON, snapshot.FormatCSV, snapshot.FormatParquet} {
		_, err := r.Query(context.Background(), "SELECT range AS n, 'row ' || range AS s FROM range(1000000)", nil, f, allowAll)
		se := wantCode(t, string(f), err, store.CodeTooLarge)
		if !strings.Contains(se.Message, "64 KiB") || !strings.Contains(se.Message, "--max-result-bytes") {
			t.Fatalf("%s: message %q does not name the limit and its flag", f, se.Message)
		}
		// Just under the limit passes.
		res, err := r.Query(context.Background(), "SELECT range AS n FROM range(100)", nil, f, allowAll)
		if err != nil || len(res.Body) == 0 || int64(len(res.Body)) > r.MaxResultBytes {
			t.Fatalf("%s: small result: %v, %d bytes", f, err, len(res.Body))
		}
	}
}

func TestQueryResultTypeNames(t *testing.T) {
	db := openDB(t)
	r := newReader(t, db)
	res, err := r.Query(context.Background(),
		`SELECT [1, 2] AS l, {'a': 1, 'b': 'x'} AS st, MAP {'k': 1.5} AS mp, INTERVAL 1 DAY AS iv, NULL AS nu,
		        1::HUGEINT AS h, now()::TIMESTAMP_NS AS tns, 'sun'::ENUM('sun', 'rain') AS en, array_value(1, 2) AS arr`,
		nil, snapshot.FormatJSON, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	var b jsonBody
	if err := json.Unmarshal(res.Body, &b); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range b.Columns {
		got = append(got, c.Name+" "+c.Type)
	}
	want := `l INTEGER[], st STRUCT(a INTEGER, b VARCHAR), mp MAP(VARCHAR, DECIMAL(2,1)), iv INTERVAL, nu INTEGER, h DECIMAL(38,0), tns TIMESTAMP_NS, en VARCHAR, arr INTEGER[2]`
	if s := strings.Join(got, ", "); s != want {
		t.Fatalf("columns:\n got %s\nwant %s", s, want)
	}
	if en := b.Rows[0]["en"]; en != "sun" {
		t.Fatalf("enum value = %v, want sun", en)
	}
}

// TestReaderOpenNeedsOpenStore: Open refuses a Reader without a store or with one not
// opened yet.
func TestReaderOpenNeedsOpenStore(t *testing.T) {
	if err := snapshot.NewReader(nil).Open(); err == nil {
		t.Fatal("Open without DB succeeded")
	}
	if err := snapshot.NewReader(store.NewDB(t.TempDir() + "/unopened.duckdb")).Open(); err == nil {
		t.Fatal("Open with an unopened DB succeeded")
	}
}
