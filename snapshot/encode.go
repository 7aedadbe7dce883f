package snapshot

import (
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

// flushBytes is how much encoded text the JSON, NDJSON and CSV writers collect before
// writing it on.
const flushBytes = 32 << 10

// encode writes every record of rr to w in format f. cursors holds the JSON object
// members that carry cursors (`"cursor":"r1…"`), written at the end of a JSON body and
// ignored by the other formats; it may be empty. f must be valid.
func encode(w io.Writer, f Format, rr array.RecordReader, cursors []byte) error {
	switch f {
	case FormatArrow:
		return writeArrow(w, rr)
	case FormatJSON:
		return writeJSON(w, rr, cursors)
	case FormatNDJSON:
		return writeNDJSON(w, rr)
	case FormatCSV:
		return writeCSV(w, rr)
	default:
		return writeParquet(w, rr)
	}
}

// column describes one result column for the text formats.
type column struct {
	// name is unique within the result (see uniqueNames).
	name string
	// typ is the DuckDB SQL type name.
	typ string
}

func columnsOf(s *arrow.Schema) []column {
	names := uniqueNames(s.Fields())
	cols := make([]column, len(names))
	for i, f := range s.Fields() {
		cols[i] = column{name: names[i], typ: sqlTypeName(f.Type)}
	}
	return cols
}

// uniqueNames returns the field names with repeats renamed as DuckDB's clients do: the
// second "a" becomes "a_1", the third "a_2", skipping names already taken.
func uniqueNames(fields []arrow.Field) []string {
	taken := make(map[string]bool, len(fields))
	names := make([]string, len(fields))
	for i, f := range fields {
		name := f.Name
		for k := 1; taken[name]; k++ {
			name = f.Name + "_" + strconv.Itoa(k)
		}
		taken[name] = true
		names[i] = name
	}
	return names
}

// sqlTypeName names an Arrow type as DuckDB names the SQL type it exports that way: the
// store.Type spelling for column types (store.TypeFromArrow), and DuckDB's spelling for
// the other types a query can return.
func sqlTypeName(dt arrow.DataType) string {
	switch dt := dt.(type) {
	case *arrow.TimestampType:
		if dt.TimeZone != "" {
			return string(store.TypeTimestampTZ)
		}
		switch dt.Unit {
		case arrow.Second:
			return "TIMESTAMP_S"
		case arrow.Millisecond:
			return "TIMESTAMP_MS"
		case arrow.Nanosecond:
			return "TIMESTAMP_NS"
		}
	case *arrow.MonthDayNanoIntervalType:
		return "INTERVAL"
	case arrow.ListLikeType:
		if fsl, ok := dt.(*arrow.FixedSizeListType); ok {
			return sqlTypeName(fsl.Elem()) + "[" + strconv.Itoa(int(fsl.Len())) + "]"
		}
		if m, ok := dt.(*arrow.MapType); ok {
			return "MAP(" + sqlTypeName(m.KeyType()) + ", " + sqlTypeName(m.ItemType()) + ")"
		}
		return sqlTypeName(dt.Elem()) + "[]"
	case *arrow.StructType:
		parts := make([]string, dt.NumFields())
		for i, f := range dt.Fields() {
			parts[i] = store.QuoteIdent(f.Name) + " " + sqlTypeName(f.Type)
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")"
	}
	if t, err := store.TypeFromArrow(dt); err == nil {
		return string(t)
	}
	return strings.ToUpper(dt.String())
}
