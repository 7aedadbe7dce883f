package client

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// wireFixture is testdata/wire/stream.json: what testdata/wire/stream.sse, bytes captured
// from a real server, holds. The JavaScript client's tests (clients/js/test/wire.test.mjs)
// read the same two files, so both clients are held to the same bytes.
type wireFixture struct {
	RetryMS int64 `json:"retry_ms"`
	Events  []struct {
		Event   string               `json:"event"`
		ID      string               `json:"id"`
		Columns []string             `json:"columns"`
		Rows    []map[string]*string `json:"rows"`
		Data    map[string]any       `json:"data"`
	} `json:"events"`
}

// TestWireFixture parses the captured stream with LF, CRLF and CR line ends, one byte
// per read, and decodes every payload into the values the fixture lists: integers and
// decimals as their exact decimal text, dates as YYYY-MM-DD, timestamps as ISO 8601
// without trailing zeros, booleans and floats as their shortest text.
func TestWireFixture(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/wire/stream.sse")
	if err != nil {
		t.Fatal(err)
	}
	var want wireFixture
	b, err := os.ReadFile("../../testdata/wire/stream.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, end := range []string{"\n", "\r\n", "\r"} {
		input := strings.ReplaceAll(string(raw), "\n", end)
		p := newSSEReader(bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(input)), 16), 1<<20)
		i := 0
		for {
			ev, err := p.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("line end %q: event %d: %v", end, i, err)
			}
			if i >= len(want.Events) {
				t.Fatalf("line end %q: more events than the fixture's %d", end, len(want.Events))
			}
			w := want.Events[i]
			if ev.name != w.Event || ev.id != w.ID {
				t.Errorf("line end %q: event %d is %s id %q, want %s id %q", end, i, ev.name, ev.id, w.Event, w.ID)
			}
			switch ev.name {
			case eventSchema, eventBatch:
				schema, recs, err := decodePayload(ev.data)
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				var cols []string
				for _, f := range schema.Fields() {
					cols = append(cols, f.Name)
				}
				rows := canonicalRows(t, recs)
				releaseAll(recs)
				if !reflect.DeepEqual(cols, w.Columns) || !reflect.DeepEqual(rows, w.Rows) {
					t.Errorf("event %d: columns %q rows %s, want %q %s", i, cols, dump(rows), w.Columns, dump(w.Rows))
				}
			case eventRefreshRequired, eventReconnect, eventFailure:
				var data map[string]any
				if err := json.Unmarshal(ev.data, &data); err != nil || !reflect.DeepEqual(data, w.Data) {
					t.Errorf("event %d: data %s (%v), want %v", i, ev.data, err, w.Data)
				}
			}
			i++
		}
		if i != len(want.Events) {
			t.Errorf("line end %q: %d events, want %d", end, i, len(want.Events))
		}
		if d, ok := p.reconnectionTime(); !ok || d != time.Duration(want.RetryMS)*time.Millisecond {
			t.Errorf("line end %q: retry %v (%v), want %d ms", end, d, ok, want.RetryMS)
		}
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// canonicalRows renders records as the fixture writes values.
func canonicalRows(t *testing.T, recs []arrow.RecordBatch) []map[string]*string {
	rows := []map[string]*string{}
	for _, rec := range recs {
		for r := 0; r < int(rec.NumRows()); r++ {
			row := map[string]*string{}
			for c, f := range rec.Schema().Fields() {
				col := rec.Column(c)
				if col.IsNull(r) {
					row[f.Name] = nil
					continue
				}
				s := canonical(t, col, r)
				row[f.Name] = &s
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func canonical(t *testing.T, col arrow.Array, i int) string {
	switch a := col.(type) {
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.String:
		return a.Value(i)
	case *array.Float64:
		return jsNumber(a.Value(i))
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Date32:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Timestamp:
		typ := a.DataType().(*arrow.TimestampType)
		tm, err := typ.GetToTimeFunc()
		if err != nil {
			t.Fatal(err)
		}
		s := tm(a.Value(i)).UTC().Format("2006-01-02T15:04:05.999999999")
		if typ.TimeZone != "" {
			s += "Z"
		}
		return s
	}
	t.Fatalf("no canonical text for %s", col.DataType())
	return ""
}

// jsNumber writes a float64 as JavaScript's Number.prototype.toString does for the
// fixture's values: the shortest text, with an exponent from 1e21 on.
func jsNumber(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if strings.Contains(s, "e+") {
		s = strings.Replace(s, "e+0", "e+", 1)
	}
	return s
}
