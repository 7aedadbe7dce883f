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
// ignored by the other formats; it may be empty. types, when not nil, are the column
// types a JSON body names (a table's own, which its Arrow form may not tell apart:
// HUGEINT and DECIMAL(38,0) are both decimal128(38,0)). f must be valid.
func encode(w io.Writer, f Format, rr array.RecordReader, cursors []byte, types []string) error {
	switch f {
	case FormatArrow:
		return writeArrow(w, rr)
	case FormatJSON:
		return writeJSON(w, rr, cursors, types)
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

// sqlTypeName names an Arrow type as DuckDB names the SQL type it exports that way
// (store.TypeFromArrow), or, for the few types no column holds, the Arrow type's name in
// upper case.
func sqlTypeName(dt arrow.DataType) string {
	if t, err := store.TypeFromArrow(dt); err == nil {
		return string(t)
	}
	return strings.ToUpper(dt.String())
}
