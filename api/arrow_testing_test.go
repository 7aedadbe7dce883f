package api_test

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/google/uuid"
)

// This file is the Arrow oracle of docs/api.md, "Column types": every data set of Arrow's
// integration files (testdata/arrow-testing, written by Arrow C++) is posted as an ingest
// body, IPC stream and IPC file, with ?create=true; the snapshot read back as Arrow must
// equal the data set's JSON twin (Arrow's integration JSON format,
// https://arrow.apache.org/docs/format/Integration.html) value for value, null for null,
// level for level, after the documented mapping; the data sets whose types do not map are
// refused naming the column.

// refusedArrowTesting are the data sets ducktail refuses, with the status and the column
// the problem names.
var refusedArrowTesting = map[string]struct {
	status int
	column string
}{
	"decimal256":           {http.StatusUnprocessableEntity, "f2"},      // decimal256(39,5): DECIMAL holds at most 38 digits
	"duplicate_fieldnames": {http.StatusBadRequest, "ints"},             // two columns named "ints"
	"duration":             {http.StatusUnprocessableEntity, "f1"},      // duration[s] values past INTERVAL's microseconds
	"null":                 {http.StatusUnprocessableEntity, "f0"},      // the null type has no column type
	"null_trivial":         {http.StatusUnprocessableEntity, "f0"},      // the same
	"union":                {http.StatusUnprocessableEntity, "dense_2"}, // a union member of the null type
}

func TestArrowIntegrationFiles(t *testing.T) {
	e := newEnv(t, options{})
	files, err := filepath.Glob("../testdata/arrow-testing/generated_*.json.gz")
	if err != nil || len(files) != 32 {
		t.Fatalf("%d data sets, %v; want 32", len(files), err)
	}
	roundTrips := 0
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "generated_"), ".json.gz")
		want := readIntegrationJSON(t, f)
		for _, form := range []struct{ ext, media string }{
			{"stream", "application/vnd.apache.arrow.stream"},
			{"arrow_file", "application/vnd.apache.arrow.file"},
		} {
			table := strings.ReplaceAll(name, "-", "_") + "_" + form.ext
			body, err := os.ReadFile(strings.TrimSuffix(f, ".json.gz") + "." + form.ext)
			if err != nil {
				t.Fatal(err)
			}
			r := e.do(t, "POST", "/v1/tables/"+table+"/rows?create=true", e.admin, body, "Content-Type: "+form.media)
			if refusal, ok := refusedArrowTesting[name]; ok {
				p := r.problem(t)
				if r.status != refusal.status || p.Column != refusal.column {
					t.Errorf("%s.%s: %d %+v; want %d naming column %s", name, form.ext, r.status, p, refusal.status, refusal.column)
				}
				continue
			}
			if r.status != http.StatusCreated {
				t.Errorf("%s.%s: ingest %d %s", name, form.ext, r.status, r.body)
				continue
			}
			schema, _, _, recs := e.snapshotArrow(t, table)
			compareIntegration(t, name+"."+form.ext, want, schema, recs)
			if form.ext == "stream" {
				roundTrips++
			}
		}
	}
	if roundTrips != 32-len(refusedArrowTesting) {
		t.Errorf("%d data sets round-trip, want %d", roundTrips, 32-len(refusedArrowTesting))
	}
}

// The integration JSON format, as far as these files use it.
type ijFile struct {
	Schema struct {
		Fields []ijField `json:"fields"`
	} `json:"schema"`
	Batches      []ijBatch `json:"batches"`
	Dictionaries []struct {
		ID   int     `json:"id"`
		Data ijBatch `json:"data"`
	} `json:"dictionaries"`
}

type ijField struct {
	Name     string    `json:"name"`
	Type     ijType    `json:"type"`
	Children []ijField `json:"children"`
	Dict     *struct {
		ID int `json:"id"`
	} `json:"dictionary"`
	Metadata []struct{ Key, Value string } `json:"metadata"`
}

type ijType struct {
	Name      string `json:"name"`
	Unit      string `json:"unit"`
	Timezone  string `json:"timezone"`
	ListSize  int    `json:"listSize"`
	Precision any    `json:"precision"` // "SINGLE" or "DOUBLE" for floating point, digits for decimals
}

type ijBatch struct {
	Count   int        `json:"count"`
	Columns []ijColumn `json:"columns"`
}

type ijColumn struct {
	Count    int               `json:"count"`
	Validity []int             `json:"VALIDITY"`
	Data     []json.RawMessage `json:"DATA"`
	Offset   []json.Number     `json:"OFFSET"`
	Size     []json.Number     `json:"SIZE"`
	Views    []struct {
		Size        int    `json:"SIZE"`
		Inlined     string `json:"INLINED"`
		PrefixHex   string `json:"PREFIX_HEX"`
		BufferIndex int    `json:"BUFFER_INDEX"`
		Offset      int    `json:"OFFSET"`
	} `json:"VIEWS"`
	Buffers  []string   `json:"VARIADIC_DATA_BUFFERS"`
	Children []ijColumn `json:"children"`
}

func readIntegrationJSON(t *testing.T, path string) *ijFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out ijFile
	dec := json.NewDecoder(zr)
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &out
}

// compareIntegration compares every column of every row of the JSON twin with the
// snapshot: same fields in order, same values after the mapping.
func compareIntegration(t *testing.T, what string, want *ijFile, schema *arrow.Schema, recs []arrow.RecordBatch) {
	t.Helper()
	dicts := map[int]ijColumn{}
	for _, d := range want.Dictionaries {
		dicts[d.ID] = d.Data.Columns[0]
	}
	if schema.NumFields() != len(want.Schema.Fields) {
		t.Errorf("%s: snapshot has %d fields, JSON %d", what, schema.NumFields(), len(want.Schema.Fields))
		return
	}
	for j, f := range want.Schema.Fields {
		if schema.Field(j).Name != f.Name {
			t.Errorf("%s: field %d is %s, JSON says %s", what, j, schema.Field(j).Name, f.Name)
			return
		}
		var got []any
		for _, rec := range recs {
			for i := 0; i < int(rec.NumRows()); i++ {
				got = append(got, arrowValue(rec.Column(j), i))
			}
		}
		var exp []any
		for _, b := range want.Batches {
			for i := 0; i < b.Count; i++ {
				exp = append(exp, ijValue(f, b.Columns[j], i, schema.Field(j).Type, dicts))
			}
		}
		if len(got) != len(exp) {
			t.Errorf("%s: column %s has %d rows, JSON %d", what, f.Name, len(got), len(exp))
			continue
		}
		for i := range exp {
			if !reflect.DeepEqual(got[i], exp[i]) {
				t.Errorf("%s: column %s (%s) row %d: snapshot %#v, JSON %#v", what, f.Name, schema.Field(j).Type, i+1, got[i], exp[i])
				break
			}
		}
	}
}

// ijValue is value i of a JSON column as the snapshot must show it (arrowValue's forms),
// converted to the Arrow type ducktail sends for the column (target).
func ijValue(f ijField, c ijColumn, i int, target arrow.DataType, dicts map[int]ijColumn) any {
	if f.Dict != nil {
		if c.Validity[i] == 0 {
			return nil
		}
		k, _ := strconv.Atoi(string(c.Data[i]))
		vf := f
		vf.Dict = nil
		return ijValue(vf, dicts[f.Dict.ID], k, target, dicts)
	}
	switch f.Type.Name {
	case "runendencoded":
		for r, end := range c.Children[0].Data {
			if n, _ := strconv.Atoi(strings.Trim(string(end), `"`)); i < n {
				return ijValue(f.Children[1], c.Children[1], r, target, dicts)
			}
		}
		panic("run past the run ends")
	}
	if c.Validity[i] == 0 {
		return nil
	}
	raw := func() string { return strings.Trim(string(c.Data[i]), `"`) }
	integer := func() int64 { n, _ := strconv.ParseInt(raw(), 10, 64); return n }
	switch f.Type.Name {
	case "bool":
		return raw() == "true"
	case "int":
		n, _ := new(big.Int).SetString(raw(), 10)
		return n.String()
	case "floatingpoint":
		x, _ := strconv.ParseFloat(raw(), 64)
		if f.Type.Precision == "SINGLE" {
			return float64(float32(x))
		}
		return x
	case "decimal":
		return raw()
	case "utf8", "largeutf8":
		var s string
		_ = json.Unmarshal(c.Data[i], &s)
		return s
	case "binary", "largebinary":
		return raw()
	case "fixedsizebinary":
		for _, m := range f.Metadata {
			if m.Key == "ARROW:extension:name" && m.Value == "arrow.uuid" {
				b, _ := hex.DecodeString(raw())
				return uuid.UUID(b).String()
			}
		}
		return raw()
	case "utf8view", "binaryview":
		v := c.Views[i]
		if v.Size <= 12 {
			return v.Inlined
		}
		b, _ := hex.DecodeString(c.Buffers[v.BufferIndex])
		if f.Type.Name == "utf8view" {
			return string(b[v.Offset : v.Offset+v.Size])
		}
		return strings.ToUpper(hex.EncodeToString(b[v.Offset : v.Offset+v.Size]))
	case "date":
		if f.Type.Unit == "MILLISECOND" {
			return floorDiv(integer(), 86_400_000)
		}
		return integer()
	case "time":
		return rescaleTime(integer(), f.Type.Unit, arrow.Microsecond)
	case "timestamp":
		return rescaleTime(integer(), f.Type.Unit, target.(*arrow.TimestampType).Unit)
	case "interval":
		var iv struct {
			Days, Milliseconds, Months int32
			Nanoseconds                int64
		}
		switch f.Type.Unit {
		case "YEAR_MONTH":
			return [3]int64{integer(), 0, 0}
		case "DAY_TIME":
			_ = json.Unmarshal(c.Data[i], &iv)
			return [3]int64{0, int64(iv.Days), int64(iv.Milliseconds) * 1000}
		}
		_ = json.Unmarshal(c.Data[i], &iv)
		return [3]int64{int64(iv.Months), int64(iv.Days), floorDiv(iv.Nanoseconds, 1000)}
	case "list", "largelist", "listview", "largelistview", "fixedsizelist", "map":
		var start, end int
		switch f.Type.Name {
		case "fixedsizelist":
			start, end = i*f.Type.ListSize, (i+1)*f.Type.ListSize
		case "listview", "largelistview":
			o, _ := c.Offset[i].Int64()
			s, _ := c.Size[i].Int64()
			start, end = int(o), int(o+s)
		default:
			o, _ := c.Offset[i].Int64()
			p, _ := c.Offset[i+1].Int64()
			start, end = int(o), int(p)
		}
		out := []any{}
		for k := start; k < end; k++ {
			if f.Type.Name == "map" {
				entries, mt := f.Children[0], target.(*arrow.MapType)
				out = append(out, []any{
					ijValue(entries.Children[0], c.Children[0].Children[0], k, mt.KeyType(), dicts),
					ijValue(entries.Children[1], c.Children[0].Children[1], k, mt.ItemType(), dicts),
				})
				continue
			}
			out = append(out, ijValue(f.Children[0], c.Children[0], k, target.(arrow.ListLikeType).Elem(), dicts))
		}
		return out
	case "struct":
		out := map[string]any{}
		st := target.(*arrow.StructType)
		for k, cf := range f.Children {
			out[cf.Name] = ijValue(cf, c.Children[k], i, st.Field(k).Type, dicts)
		}
		return out
	}
	panic("no JSON reader for type " + f.Type.Name)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// rescaleTime converts v from the unit the JSON names to unit: floored to a coarser one,
// multiplied to a finer one.
func rescaleTime(v int64, from string, to arrow.TimeUnit) int64 {
	per := map[string]int64{"SECOND": 1, "MILLISECOND": 1e3, "MICROSECOND": 1e6, "NANOSECOND": 1e9}[from]
	want := []int64{1, 1e3, 1e6, 1e9}[to]
	if per > want {
		return floorDiv(v, per/want)
	}
	return v * (want / per)
}

// arrowValue is value i of a snapshot column in a form comparable with ijValue's:
// integers and decimals (unscaled) as decimal strings, floats as float64, binary as
// upper-case hex, dates as days, times and timestamps as integers in the type's unit,
// intervals as [months, days, microseconds], lists as []any, structs as map[string]any,
// maps as []any of [key, value].
func arrowValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Decimal128:
		return a.Value(i).BigInt().String()
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return strings.ToUpper(hex.EncodeToString(a.Value(i)))
	case *array.Date32:
		return int64(a.Value(i))
	case *array.Time64:
		return int64(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		return [3]int64{int64(v.Months), int64(v.Days), v.Nanoseconds / 1000}
	case *array.Dictionary:
		return arrowValue(a.Dictionary(), a.GetValueIndex(i))
	case *array.Map:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for k := start; k < end; k++ {
			out = append(out, []any{arrowValue(a.Keys(), int(k)), arrowValue(a.Items(), int(k))})
		}
		return out
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for k := start; k < end; k++ {
			out = append(out, arrowValue(a.ListValues(), int(k)))
		}
		return out
	case *array.Struct:
		out := map[string]any{}
		for k := 0; k < a.NumField(); k++ {
			out[a.DataType().(*arrow.StructType).Field(k).Name] = arrowValue(a.Field(k), i)
		}
		return out
	}
	if s, ok := a.(interface{ ValueStr(int) string }); ok && arrow.IsInteger(a.DataType().ID()) {
		return s.ValueStr(i)
	}
	panic(fmt.Sprintf("no reader for Arrow type %s", a.DataType()))
}
