package ingest

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/ducktail/ducktail/store"
)

// benchRows is the number of rows of every benchmark body.
const benchRows = 100_000

// benchSchema is the 10-column table the benchmark bodies fill.
func benchSchema(tb testing.TB) *store.Schema {
	return schemaOf(tb, "id BIGINT", "name VARCHAR", "price DOUBLE", "qty INTEGER", "ok BOOLEAN",
		"day DATE", "at TIMESTAMP", "amount DECIMAL(18,2)", "city VARCHAR", "score DOUBLE")
}

var benchCities = []string{"Seattle", "Portland", "San Francisco", "Los Angeles", "New York", "Boston", "Chicago"}

// benchBodies returns the same benchRows rows as CSV, JSON, NDJSON and an Arrow IPC
// stream.
var benchBodies = sync.OnceValues(func() (map[string][]byte, error) {
	var csv, js, nd bytes.Buffer
	csv.WriteString("id,name,price,qty,ok,day,at,amount,city,score\n")
	js.WriteByte('[')
	for i := range benchRows {
		name := fmt.Sprintf("customer %d", i*7919%100_003)
		price := float64(i%10_000) / 100
		day := fmt.Sprintf("20%02d-%02d-%02d", 10+i%15, 1+i%12, 1+i%28)
		at := fmt.Sprintf("%s %02d:%02d:%02d.%06d", day, i%24, i%60, (i/7)%60, i%1_000_000)
		amount := fmt.Sprintf("%d.%02d", i*13%1_000_000, i%100)
		city := benchCities[i%len(benchCities)]
		score := float64(i%977) * 1.25e-3
		fmt.Fprintf(&csv, "%d,%s,%g,%d,%t,%s,%s,%s,%s,%g\n", i, name, price, i%5000, i%3 == 0, day, at, amount, city, score)
		row := fmt.Sprintf(`{"id":%d,"name":"%s","price":%g,"qty":%d,"ok":%t,"day":"%s","at":"%s","amount":%s,"city":"%s","score":%g}`,
			i, name, price, i%5000, i%3 == 0, day, at, amount, city, score)
		if i > 0 {
			js.WriteByte(',')
		}
		js.WriteString(row)
		nd.WriteString(row)
		nd.WriteByte('\n')
	}
	js.WriteByte(']')
	s := &store.Schema{Columns: []store.Column{
		{Name: "id", Type: store.TypeBigint}, {Name: "name", Type: store.TypeVarchar}, {Name: "price", Type: store.TypeDouble},
		{Name: "qty", Type: store.TypeInteger}, {Name: "ok", Type: store.TypeBoolean}, {Name: "day", Type: store.TypeDate},
		{Name: "at", Type: store.TypeTimestamp}, {Name: "amount", Type: "DECIMAL(18,2)"}, {Name: "city", Type: store.TypeVarchar},
		{Name: "score", Type: store.TypeDouble},
	}}
	rec, err := csvDecoder{}.Decode(csv.Bytes(), s)
	if err != nil {
		return nil, err
	}
	// Arrow bodies hold batches of 10,000 rows, as a client library would send.
	var batches []arrow.RecordBatch
	for off := int64(0); off < rec.NumRows(); off += 10_000 {
		batches = append(batches, rec.NewSlice(off, off+10_000))
	}
	var arrowBody bytes.Buffer
	if err := writeStream(&arrowBody, rec.Schema(), batches); err != nil {
		return nil, err
	}
	return map[string][]byte{
		csvType:         csv.Bytes(),
		jsonType:        js.Bytes(),
		ndjsonType:      nd.Bytes(),
		arrowStreamType: arrowBody.Bytes(),
	}, nil
})

func benchmarkDecode(b *testing.B, contentType string) {
	bodies, err := benchBodies()
	if err != nil {
		b.Fatal(err)
	}
	body := bodies[contentType]
	s := benchSchema(b)
	d, err := DecoderFor(contentType)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rec, err := d.Decode(body, s)
		if err != nil {
			b.Fatal(err)
		}
		if rec.NumRows() != benchRows {
			b.Fatalf("rows = %d, want %d", rec.NumRows(), benchRows)
		}
	}
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkDecodeCSV decodes a 100,000-row, 10-column CSV body.
func BenchmarkDecodeCSV(b *testing.B) { benchmarkDecode(b, csvType) }

// BenchmarkDecodeJSON decodes the same rows as a JSON array of objects.
func BenchmarkDecodeJSON(b *testing.B) { benchmarkDecode(b, jsonType) }

// BenchmarkDecodeNDJSON decodes the same rows as NDJSON.
func BenchmarkDecodeNDJSON(b *testing.B) { benchmarkDecode(b, ndjsonType) }

// BenchmarkDecodeArrow decodes the same rows as an Arrow IPC stream of ten batches
// whose types equal the columns'.
func BenchmarkDecodeArrow(b *testing.B) { benchmarkDecode(b, arrowStreamType) }

// benchNestedSchema is a 10-column table with two nested columns, a STRUCT and a LIST.
func benchNestedSchema(tb testing.TB) *store.Schema {
	return schemaOf(tb, "id BIGINT", "name VARCHAR", "price DOUBLE", "qty INTEGER", "ok BOOLEAN",
		"day DATE", "at TIMESTAMP", "amount DECIMAL(18,2)", "geo STRUCT(lat DOUBLE, lon DOUBLE, city VARCHAR)", "tags VARCHAR[]")
}

// benchNestedBodies returns benchRows rows of benchNestedSchema as JSON and NDJSON.
var benchNestedBodies = sync.OnceValue(func() map[string][]byte {
	var js, nd bytes.Buffer
	js.WriteByte('[')
	for i := range benchRows {
		day := fmt.Sprintf("20%02d-%02d-%02d", 10+i%15, 1+i%12, 1+i%28)
		row := fmt.Sprintf(`{"id":%d,"name":"customer %d","price":%g,"qty":%d,"ok":%t,"day":"%s","at":"%s %02d:%02d:%02d","amount":%d.%02d,`+
			`"geo":{"lat":%g,"lon":%g,"city":"%s"},"tags":["t%d","t%d","%s"]}`,
			i, i*7919%100_003, float64(i%10_000)/100, i%5000, i%3 == 0, day, day, i%24, i%60, (i/7)%60, i*13%1_000_000, i%100,
			float64(i%180_000)/1000-90, float64(i%360_000)/1000-180, benchCities[i%len(benchCities)], i%17, i%5, benchCities[i%3])
		if i > 0 {
			js.WriteByte(',')
		}
		js.WriteString(row)
		nd.WriteString(row)
		nd.WriteByte('\n')
	}
	js.WriteByte(']')
	return map[string][]byte{jsonType: js.Bytes(), ndjsonType: nd.Bytes()}
})

func benchmarkDecodeNested(b *testing.B, contentType string) {
	body := benchNestedBodies()[contentType]
	s := benchNestedSchema(b)
	d, err := DecoderFor(contentType)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rec, err := d.Decode(body, s)
		if err != nil {
			b.Fatal(err)
		}
		if rec.NumRows() != benchRows {
			b.Fatalf("rows = %d, want %d", rec.NumRows(), benchRows)
		}
	}
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkDecodeJSONNested decodes a 100,000-row JSON array of objects of 10 columns,
// a STRUCT and a LIST among them.
func BenchmarkDecodeJSONNested(b *testing.B) { benchmarkDecodeNested(b, jsonType) }

// BenchmarkDecodeNDJSONNested decodes the same rows as NDJSON.
func BenchmarkDecodeNDJSONNested(b *testing.B) { benchmarkDecodeNested(b, ndjsonType) }

// BenchmarkInferCSV infers the columns of the CSV body.
func BenchmarkInferCSV(b *testing.B) {
	bodies, err := benchBodies()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := (csvDecoder{}).Infer(bodies[csvType]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestBenchBodies checks that the benchmark bodies decode to the same record and that
// inference finds the benchmark schema in the CSV one.
func TestBenchBodies(t *testing.T) {
	bodies, err := benchBodies()
	if err != nil {
		t.Fatal(err)
	}
	s := benchSchema(t)
	var first arrow.RecordBatch
	for _, ct := range []string{csvType, jsonType, ndjsonType, arrowStreamType} {
		rec := decodeOK(t, ct, string(bodies[ct]), s)
		if first == nil {
			first = rec
			continue
		}
		if !array.RecordEqual(first, rec) {
			t.Errorf("%s body decodes differently from the CSV body", ct)
		}
	}
	specs := inferOK(t, csvType, string(bodies[csvType]))
	want := []string{"BIGINT", "VARCHAR", "DOUBLE", "BIGINT", "BOOLEAN", "DATE", "TIMESTAMP", "DOUBLE", "VARCHAR", "DOUBLE"}
	for i, sp := range specs {
		if sp.Type != want[i] {
			t.Errorf("inferred %s as %s, want %s", sp.Name, sp.Type, want[i])
		}
	}
}

// writeStream writes batches as an Arrow IPC stream.
func writeStream(w io.Writer, schema *arrow.Schema, batches []arrow.RecordBatch) error {
	iw := ipc.NewWriter(w, ipc.WithSchema(schema))
	for _, b := range batches {
		if err := iw.Write(b); err != nil {
			return err
		}
	}
	return iw.Close()
}
