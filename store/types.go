package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Type is a column's SQL type in DuckDB's canonical spelling, for example "BIGINT",
// "DECIMAL(18,3)" or "TIMESTAMPTZ". ParseType accepts the common aliases.
type Type string

// The supported column types. Each maps to exactly one Arrow type, the one DuckDB itself
// exports for it (Type.Arrow), so that live batches and replayed batches carry the same
// Arrow schema.
const (
	TypeBoolean     Type = "BOOLEAN"
	TypeTinyint     Type = "TINYINT"
	TypeSmallint    Type = "SMALLINT"
	TypeInteger     Type = "INTEGER"
	TypeBigint      Type = "BIGINT"
	TypeUTinyint    Type = "UTINYINT"
	TypeUSmallint   Type = "USMALLINT"
	TypeUInteger    Type = "UINTEGER"
	TypeUBigint     Type = "UBIGINT"
	TypeFloat       Type = "FLOAT"
	TypeDouble      Type = "DOUBLE"
	TypeVarchar     Type = "VARCHAR"
	TypeBlob        Type = "BLOB"
	TypeDate        Type = "DATE"
	TypeTime        Type = "TIME"
	TypeTimestamp   Type = "TIMESTAMP"
	TypeTimestampTZ Type = "TIMESTAMPTZ"
)

// TimeZone is the DuckDB session time zone ducktail pins for every connection, whatever
// the server's TZ, and the zone of every TIMESTAMPTZ Arrow field.
const TimeZone = "UTC"

var typeAliases = map[string]Type{
	"BOOLEAN": TypeBoolean, "BOOL": TypeBoolean, "LOGICAL": TypeBoolean,
	"TINYINT": TypeTinyint, "INT1": TypeTinyint,
	"SMALLINT": TypeSmallint, "INT2": TypeSmallint, "SHORT": TypeSmallint,
	"INTEGER": TypeInteger, "INT": TypeInteger, "INT4": TypeInteger, "SIGNED": TypeInteger,
	"BIGINT": TypeBigint, "INT8": TypeBigint, "LONG": TypeBigint,
	"UTINYINT": TypeUTinyint, "USMALLINT": TypeUSmallint, "UINTEGER": TypeUInteger, "UBIGINT": TypeUBigint,
	"FLOAT": TypeFloat, "FLOAT4": TypeFloat, "REAL": TypeFloat,
	"DOUBLE": TypeDouble, "FLOAT8": TypeDouble,
	"VARCHAR": TypeVarchar, "TEXT": TypeVarchar, "STRING": TypeVarchar, "CHAR": TypeVarchar, "BPCHAR": TypeVarchar,
	"BLOB": TypeBlob, "BYTEA": TypeBlob, "BINARY": TypeBlob, "VARBINARY": TypeBlob,
	"DATE":      TypeDate,
	"TIME":      TypeTime,
	"TIMESTAMP": TypeTimestamp, "DATETIME": TypeTimestamp,
	"TIMESTAMPTZ": TypeTimestampTZ, "TIMESTAMP WITH TIME ZONE": TypeTimestampTZ,
}

// ParseType normalizes a SQL type name: case-insensitive, DuckDB aliases accepted
// ("INT8", "TEXT", "TIMESTAMP WITH TIME ZONE"), DECIMAL(p,s) / NUMERIC(p,s) with
// 1 ≤ p ≤ 38 and 0 ≤ s ≤ p. The error is a CodeInvalid *Error listing what is supported.
func ParseType(s string) (Type, error) {
	u := strings.Join(strings.Fields(strings.ToUpper(s)), " ")
	if t, ok := typeAliases[u]; ok {
		return t, nil
	}
	if p, sc, ok := parseDecimal(u); ok {
		return decimalType(p, sc), nil
	}
	return "", &Error{Code: CodeInvalid, Message: fmt.Sprintf("unsupported column type %s; use BOOLEAN, TINYINT, SMALLINT, INTEGER, BIGINT, UTINYINT, USMALLINT, UINTEGER, UBIGINT, FLOAT, DOUBLE, DECIMAL(p,s), VARCHAR, BLOB, DATE, TIME, TIMESTAMP or TIMESTAMPTZ", quoteForMessage(s))}
}

func decimalType(precision, scale int32) Type {
	return Type(fmt.Sprintf("DECIMAL(%d,%d)", precision, scale))
}

// parseDecimal parses "DECIMAL(p,s)", "NUMERIC(p,s)", "DECIMAL(p)" (s = 0) and "DECIMAL"
// (18,3, DuckDB's default).
func parseDecimal(u string) (precision, scale int32, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(u, "DECIMAL"):
		rest = u[len("DECIMAL"):]
	case strings.HasPrefix(u, "NUMERIC"):
		rest = u[len("NUMERIC"):]
	default:
		return 0, 0, false
	}
	rest = strings.ReplaceAll(rest, " ", "")
	if rest == "" {
		return 18, 3, true
	}
	if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return 0, 0, false
	}
	parts := strings.Split(rest[1:len(rest)-1], ",")
	if len(parts) > 2 {
		return 0, 0, false
	}
	p, err := strconv.Atoi(parts[0])
	if err != nil || p < 1 || p > 38 {
		return 0, 0, false
	}
	s := 0
	if len(parts) == 2 {
		if s, err = strconv.Atoi(parts[1]); err != nil || s < 0 || s > p {
			return 0, 0, false
		}
	}
	return int32(p), int32(s), true
}

// Decimal returns the precision and scale of a DECIMAL type; ok is false for other types.
func (t Type) Decimal() (precision, scale int32, ok bool) {
	return parseDecimal(string(t))
}

// Arrow returns the Arrow data type DuckDB exports for t (Arrow columnar format spec
// names): BOOLEAN bool, integers int8…uint64, FLOAT float32, DOUBLE float64, DECIMAL
// decimal128(p,s), VARCHAR utf8, BLOB binary, DATE date32, TIME time64[us], TIMESTAMP
// timestamp[us], TIMESTAMPTZ timestamp[us, tz=UTC]. It panics on an unparsed Type.
func (t Type) Arrow() arrow.DataType {
	switch t {
	case TypeBoolean:
		return arrow.FixedWidthTypes.Boolean
	case TypeTinyint:
		return arrow.PrimitiveTypes.Int8
	case TypeSmallint:
		return arrow.PrimitiveTypes.Int16
	case TypeInteger:
		return arrow.PrimitiveTypes.Int32
	case TypeBigint:
		return arrow.PrimitiveTypes.Int64
	case TypeUTinyint:
		return arrow.PrimitiveTypes.Uint8
	case TypeUSmallint:
		return arrow.PrimitiveTypes.Uint16
	case TypeUInteger:
		return arrow.PrimitiveTypes.Uint32
	case TypeUBigint:
		return arrow.PrimitiveTypes.Uint64
	case TypeFloat:
		return arrow.PrimitiveTypes.Float32
	case TypeDouble:
		return arrow.PrimitiveTypes.Float64
	case TypeVarchar:
		return arrow.BinaryTypes.String
	case TypeBlob:
		return arrow.BinaryTypes.Binary
	case TypeDate:
		return arrow.FixedWidthTypes.Date32
	case TypeTime:
		return arrow.FixedWidthTypes.Time64us
	case TypeTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case TypeTimestampTZ:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: TimeZone}
	}
	if p, s, ok := t.Decimal(); ok {
		return &arrow.Decimal128Type{Precision: p, Scale: s}
	}
	panic("store: unknown column type " + string(t))
}

// TypeFromArrow returns the column type that stores values of an Arrow type without loss,
// used when a table is created from the first Arrow batch: integers and floats keep their
// width, float16 widens to FLOAT, any string or binary layout maps to VARCHAR or BLOB,
// dictionary-encoded strings to VARCHAR, any date to DATE, any time to TIME, timestamps to
// TIMESTAMP or (with a zone) TIMESTAMPTZ, decimal128 to DECIMAL. Other types (nested,
// intervals, durations, decimal256) are a CodeUnprocessable *Error.
func TypeFromArrow(dt arrow.DataType) (Type, error) {
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return TypeBoolean, nil
	case *arrow.Int8Type:
		return TypeTinyint, nil
	case *arrow.Int16Type:
		return TypeSmallint, nil
	case *arrow.Int32Type:
		return TypeInteger, nil
	case *arrow.Int64Type:
		return TypeBigint, nil
	case *arrow.Uint8Type:
		return TypeUTinyint, nil
	case *arrow.Uint16Type:
		return TypeUSmallint, nil
	case *arrow.Uint32Type:
		return TypeUInteger, nil
	case *arrow.Uint64Type:
		return TypeUBigint, nil
	case *arrow.Float16Type, *arrow.Float32Type:
		return TypeFloat, nil
	case *arrow.Float64Type:
		return TypeDouble, nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return TypeVarchar, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return TypeBlob, nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return TypeDate, nil
	case *arrow.Time32Type, *arrow.Time64Type:
		return TypeTime, nil
	case *arrow.TimestampType:
		if dt.TimeZone != "" {
			return TypeTimestampTZ, nil
		}
		return TypeTimestamp, nil
	case *arrow.Decimal128Type:
		return decimalType(dt.Precision, dt.Scale), nil
	case *arrow.DictionaryType:
		return TypeFromArrow(dt.ValueType)
	}
	return "", &Error{Code: CodeUnprocessable, Message: fmt.Sprintf("unsupported Arrow type %s", dt)}
}

// Column is one user column. ID is stable for the life of an activation and names the
// physical column ("c<ID>"), so renames and drops never move values between names.
type Column struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Type Type   `json:"type"`
}

// Schema is one schema version of an activation: the user columns, in order, that
// commits from FromSeq on were written under (docs/design.md, "Storage model").
type Schema struct {
	Version int      `json:"version"`
	FromSeq int64    `json:"from_seq"`
	Columns []Column `json:"columns"`
}

// Arrow returns the Arrow schema of batches written under s: one nullable field per
// column, named as the column, typed by Type.Arrow.
func (s *Schema) Arrow() *arrow.Schema {
	fields := make([]arrow.Field, len(s.Columns))
	for i, c := range s.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type.Arrow(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// Column returns the column named name (exact match first, then case-insensitive, as
// DuckDB resolves identifiers) and its index, or -1.
func (s *Schema) Column(name string) (Column, int) {
	for i, c := range s.Columns {
		if c.Name == name {
			return c, i
		}
	}
	for i, c := range s.Columns {
		if SameName(c.Name, name) {
			return c, i
		}
	}
	return Column{}, -1
}

// ColumnSpec names and types a column to create.
type ColumnSpec struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func physicalColumn(id int) string { return "c" + strconv.Itoa(id) }
