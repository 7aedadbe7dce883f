package stream

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// TestSchemaMessageStreamsAreArrowIPC: a payload headed by the shared schema message is
// the stream ArrowIPC writes, byte for byte, for flat, nested, union and dictionary
// columns, whole records and slices of them, and ipc.NewReader reads its rows back.
func TestSchemaMessageStreamsAreArrowIPC(t *testing.T) {
	for _, c := range []struct {
		name    string
		columns []store.Column
		rows    string
	}{
		{"flat", []store.Column{{Name: "t", Type: "TIMESTAMP"}, {Name: "d", Type: "DATE"}, {Name: "n", Type: "BIGINT"},
			{Name: "x", Type: "DOUBLE"}, {Name: "s", Type: "VARCHAR"}, {Name: "b", Type: "BOOLEAN"}},
			`[{"t":"2006-01-01T08:00:00","d":"2006-01-01","n":1,"x":0.5,"s":"SEA","b":true},
			  {"t":null,"d":"2006-01-02","n":null,"x":1.5,"s":"a longer string","b":false},
			  {"t":"2006-01-03T08:00:00","d":null,"n":3,"x":null,"s":null,"b":null}]`},
		{"nested", []store.Column{{Name: "l", Type: "INTEGER[]"}, {Name: "st", Type: "STRUCT(a INTEGER, b VARCHAR)"},
			{Name: "m", Type: "MAP(VARCHAR, INTEGER)"}},
			`[{"l":[1,2],"st":{"a":1,"b":"x"},"m":[{"key":"k","value":1}]},
			  {"l":null,"st":null,"m":null},
			  {"l":[],"st":{"a":null,"b":"y"},"m":[]}]`},
		{"union", []store.Column{{Name: "u", Type: "UNION(i INTEGER, s VARCHAR)"}},
			`[{"u":[0,1]},{"u":[1,"x"]},{"u":[0,null]}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := &store.Schema{Columns: c.columns}
			rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema.Arrow(), strings.NewReader(c.rows))
			if err != nil {
				t.Fatal(err)
			}
			m := newSchemaMessage(schema)
			for _, recs := range [][]arrow.RecordBatch{nil, {rec}, {rec.NewSlice(1, 3)}, {rec, rec.NewSlice(2, 3)}} {
				want, err := ArrowIPC(rec.Schema(), recs)
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.stream(rec.Schema(), recs, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%d records: the stream differs from ArrowIPC's", len(recs))
				}
				assertRows(t, got, recs)
			}
		})
	}
}

// TestSchemaMessageWritesDictionariesWhole: a schema holding a dictionary (ENUM) is written
// by ipc.Writer whole, with its dictionary batch.
func TestSchemaMessageWritesDictionariesWhole(t *testing.T) {
	schema := &store.Schema{Columns: []store.Column{{Name: "e", Type: "ENUM('a', 'b')"}, {Name: "l", Type: "ENUM('a')[]"}}}
	if m := newSchemaMessage(schema); !m.whole {
		t.Fatal("a schema holding an ENUM is not written whole")
	}
	if m := newSchemaMessage(&store.Schema{Columns: []store.Column{{Name: "n", Type: "INTEGER[]"}}}); m.whole {
		t.Fatal("a schema without a dictionary is written whole")
	}
}

// assertRows reads payload with ipc.NewReader and compares its rows with recs'.
func assertRows(t *testing.T, payload []byte, recs []arrow.RecordBatch) {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	for i := 0; r.Next(); i++ {
		if i >= len(recs) || !array.RecordEqual(r.RecordBatch(), recs[i]) {
			t.Fatalf("record %d read back differs", i)
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
}

// TestBase64PayloadFramesAsEncode: the frame of an Arrow payload, its base64 written
// straight into it, is what Encode makes of the base64 text in every framing.
func TestBase64PayloadFramesAsEncode(t *testing.T) {
	for _, p := range [][]byte{{0xff}, {0, 1, 2, 0x0a, 0x0d}, bytes.Repeat([]byte{0xfb, 0xff, 0x3e}, 100)} {
		for _, f := range []Framing{FramingSSE, FramingNDJSON, FramingJSONSeq} {
			for _, id := range []string{"", "r1.cursor_-"} {
				got, err := encodePayload(f, EventBatch, id, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, err := f.Encode(nil, EventBatch, id, []byte(base64.StdEncoding.EncodeToString(p)), false)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: %q, want %q", f.ContentType(), got, want)
				}
			}
			if _, err := encodePayload(f, EventBatch, "a\nb", p, nil); err == nil {
				t.Fatalf("%s: an id holding LF framed", f.ContentType())
			}
		}
	}
}
