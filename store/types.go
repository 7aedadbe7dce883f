package store

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// Type is a column's SQL type in its canonical spelling (ParseType), for example "BIGINT",
// "DECIMAL(18,3)", "TIMESTAMPTZ" or "STRUCT(lat DOUBLE, tags VARCHAR[])". Type.Node is
// its parsed tree.
type Type string

// The scalar column types. Each type maps to exactly one Arrow type, the one DuckDB itself
// exports for it (Type.Arrow), so that live batches and replayed batches carry the same
// Arrow schema.
const (
	TypeBoolean     Type = "BOOLEAN"
	TypeTinyint     Type = "TINYINT"
	TypeSmallint    Type = "SMALLINT"
	TypeInteger     Type = "INTEGER"
	TypeBigint      Type = "BIGINT"
	TypeHugeint     Type = "HUGEINT"
	TypeUTinyint    Type = "UTINYINT"
	TypeUSmallint   Type = "USMALLINT"
	TypeUInteger    Type = "UINTEGER"
	TypeUBigint     Type = "UBIGINT"
	TypeUHugeint    Type = "UHUGEINT"
	TypeFloat       Type = "FLOAT"
	TypeDouble      Type = "DOUBLE"
	TypeVarchar     Type = "VARCHAR"
	TypeJSON        Type = "JSON"
	TypeUUID        Type = "UUID"
	TypeBlob        Type = "BLOB"
	TypeDate        Type = "DATE"
	TypeTime        Type = "TIME"
	TypeTimestamp   Type = "TIMESTAMP"
	TypeTimestampS  Type = "TIMESTAMP_S"
	TypeTimestampMS Type = "TIMESTAMP_MS"
	TypeTimestampNS Type = "TIMESTAMP_NS"
	TypeTimestampTZ Type = "TIMESTAMPTZ"
	TypeInterval    Type = "INTERVAL"
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
	"HUGEINT": TypeHugeint, "INT128": TypeHugeint,
	"UTINYINT": TypeUTinyint, "UINT8": TypeUTinyint, "USMALLINT": TypeUSmallint, "UINT16": TypeUSmallint,
	"UINTEGER": TypeUInteger, "UINT32": TypeUInteger, "UBIGINT": TypeUBigint, "UINT64": TypeUBigint,
	"UHUGEINT": TypeUHugeint, "UINT128": TypeUHugeint,
	"FLOAT": TypeFloat, "FLOAT4": TypeFloat, "REAL": TypeFloat,
	"DOUBLE": TypeDouble, "FLOAT8": TypeDouble, "DOUBLE PRECISION": TypeDouble,
	"VARCHAR": TypeVarchar, "TEXT": TypeVarchar, "STRING": TypeVarchar, "CHAR": TypeVarchar, "BPCHAR": TypeVarchar,
	"JSON": TypeJSON, "UUID": TypeUUID,
	"BLOB": TypeBlob, "BYTEA": TypeBlob, "BINARY": TypeBlob, "VARBINARY": TypeBlob,
	"DATE":      TypeDate,
	"TIME":      TypeTime,
	"TIMESTAMP": TypeTimestamp, "DATETIME": TypeTimestamp, "TIMESTAMP_US": TypeTimestamp,
	"TIMESTAMP_S": TypeTimestampS, "TIMESTAMP_MS": TypeTimestampMS, "TIMESTAMP_NS": TypeTimestampNS,
	"TIMESTAMPTZ": TypeTimestampTZ, "TIMESTAMP WITH TIME ZONE": TypeTimestampTZ,
	"INTERVAL": TypeInterval,
}

// Decimal returns the precision and scale of a DECIMAL type; ok is false for other types.
func (t Type) Decimal() (precision, scale int32, ok bool) {
	n := t.Node()
	return n.Precision, n.Scale, n.Kind == KindDecimal
}

// Nested reports whether t is a LIST, ARRAY, STRUCT, MAP or UNION.
func (t Type) Nested() bool {
	switch t.Node().Kind {
	case KindList, KindArray, KindStruct, KindMap, KindUnion:
		return true
	}
	return false
}

var arrowCache sync.Map // Type → arrow.DataType

// Arrow returns the Arrow data type DuckDB exports for t (docs/design.md, "Column types").
// It panics on an unparsed Type.
func (t Type) Arrow() arrow.DataType {
	if dt, ok := arrowCache.Load(t); ok {
		return dt.(arrow.DataType)
	}
	dt := t.Node().Arrow()
	arrowCache.Store(t, dt)
	return dt
}

var scalarArrow = map[Type]arrow.DataType{
	TypeBoolean:     arrow.FixedWidthTypes.Boolean,
	TypeTinyint:     arrow.PrimitiveTypes.Int8,
	TypeSmallint:    arrow.PrimitiveTypes.Int16,
	TypeInteger:     arrow.PrimitiveTypes.Int32,
	TypeBigint:      arrow.PrimitiveTypes.Int64,
	TypeHugeint:     &arrow.Decimal128Type{Precision: 38},
	TypeUTinyint:    arrow.PrimitiveTypes.Uint8,
	TypeUSmallint:   arrow.PrimitiveTypes.Uint16,
	TypeUInteger:    arrow.PrimitiveTypes.Uint32,
	TypeUBigint:     arrow.PrimitiveTypes.Uint64,
	TypeUHugeint:    &arrow.Decimal128Type{Precision: 38},
	TypeFloat:       arrow.PrimitiveTypes.Float32,
	TypeDouble:      arrow.PrimitiveTypes.Float64,
	TypeVarchar:     arrow.BinaryTypes.String,
	TypeJSON:        arrow.BinaryTypes.String,
	TypeUUID:        arrow.BinaryTypes.String,
	TypeBlob:        arrow.BinaryTypes.Binary,
	TypeDate:        arrow.FixedWidthTypes.Date32,
	TypeTime:        arrow.FixedWidthTypes.Time64us,
	TypeTimestamp:   &arrow.TimestampType{Unit: arrow.Microsecond},
	TypeTimestampS:  &arrow.TimestampType{Unit: arrow.Second},
	TypeTimestampMS: &arrow.TimestampType{Unit: arrow.Millisecond},
	TypeTimestampNS: &arrow.TimestampType{Unit: arrow.Nanosecond},
	TypeTimestampTZ: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: TimeZone},
	TypeInterval:    arrow.FixedWidthTypes.MonthDayNanoInterval,
}

// Arrow returns the Arrow type DuckDB exports for n: BOOLEAN bool, integers int8…uint64,
// HUGEINT and UHUGEINT decimal128(38,0), FLOAT float32, DOUBLE float64, DECIMAL
// decimal128(p,s), VARCHAR, JSON and UUID utf8, BLOB binary, DATE date32, TIME
// time64[us], TIMESTAMP_S/_MS/TIMESTAMP/_NS timestamp[s/ms/us/ns], TIMESTAMPTZ
// timestamp[us, tz=UTC], INTERVAL month_day_nano_interval, ENUM dictionary<utf8> indexed
// by uint8, uint16 or uint32 as the value count needs, T[] list<l: T>, T[n]
// fixed_size_list<: T>[n], STRUCT struct, MAP map<K, V>, UNION sparse_union with type
// codes 0…n-1; every child nullable except map keys.
func (n *TypeNode) Arrow() arrow.DataType {
	switch n.Kind {
	case KindScalar:
		return scalarArrow[n.Scalar]
	case KindDecimal:
		return &arrow.Decimal128Type{Precision: n.Precision, Scale: n.Scale}
	case KindEnum:
		var index arrow.DataType = arrow.PrimitiveTypes.Uint32
		switch {
		case len(n.Values) <= math.MaxUint8:
			index = arrow.PrimitiveTypes.Uint8
		case len(n.Values) <= math.MaxUint16:
			index = arrow.PrimitiveTypes.Uint16
		}
		return &arrow.DictionaryType{IndexType: index, ValueType: arrow.BinaryTypes.String}
	case KindList:
		return arrow.ListOfField(arrow.Field{Name: "l", Type: n.Elem.Arrow(), Nullable: true})
	case KindArray:
		return arrow.FixedSizeListOfField(int32(n.Size), arrow.Field{Name: "", Type: n.Elem.Arrow(), Nullable: true})
	case KindMap:
		return arrow.MapOf(n.Key.Arrow(), n.Value.Arrow())
	case KindStruct:
		return arrow.StructOf(n.arrowFields()...)
	case KindUnion:
		codes := make([]arrow.UnionTypeCode, len(n.Fields))
		for i := range codes {
			codes[i] = arrow.UnionTypeCode(i)
		}
		return arrow.SparseUnionOf(n.arrowFields(), codes)
	}
	panic("store: bad type node")
}

func (n *TypeNode) arrowFields() []arrow.Field {
	fields := make([]arrow.Field, len(n.Fields))
	for i, f := range n.Fields {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type.Arrow(), Nullable: true}
	}
	return fields
}

// TypeFromArrow returns the column type that stores values of an Arrow type without loss,
// used when a table is created from the first Arrow batch (docs/design.md, "Column types"):
// integers and floats keep their width, float16 widens to FLOAT, any string or binary
// layout maps to VARCHAR or BLOB, the arrow.uuid extension to UUID, the arrow.json
// extension to JSON, dictionaries and run-end encoded arrays to their value type, any date
// to DATE, any time to TIME, timestamps to TIMESTAMP_S, TIMESTAMP_MS, TIMESTAMP or
// TIMESTAMP_NS by unit or (with a zone) TIMESTAMPTZ, decimal32/64/128/256 with precision
// ≤ 38 to DECIMAL, intervals and durations to INTERVAL, lists of any layout to T[],
// fixed-size lists to T[n], structs to STRUCT, maps to MAP, unions to UNION. Other types
// (null, decimals past 38 digits, structs with no or duplicate member names, …) are a
// CodeUnprocessable *Error naming the type.
func TypeFromArrow(dt arrow.DataType) (Type, error) {
	return TypeFromArrowField(arrow.Field{Type: dt})
}

// TypeFromArrowField is TypeFromArrow for a field, which also reads an extension type
// named only in the field's metadata ("ARROW:extension:name", Arrow columnar format,
// "Extension Types"), as a reader that has not registered it sees it: arrow.uuid over
// fixed_size_binary(16) is UUID, arrow.json over a string layout is JSON, and any other
// extension is its storage type.
func TypeFromArrowField(f arrow.Field) (Type, error) {
	n, err := nodeFromField(f, 0)
	if err != nil {
		return "", err
	}
	return n.Type(), nil
}

func nodeFromField(f arrow.Field, depth int) (*TypeNode, error) {
	if name, ok := f.Metadata.GetValue("ARROW:extension:name"); ok {
		switch {
		case name == "arrow.uuid" && arrow.TypeEqual(f.Type, &arrow.FixedSizeBinaryType{ByteWidth: 16}):
			return &TypeNode{Kind: KindScalar, Scalar: TypeUUID}, nil
		case name == "arrow.json" && (f.Type.ID() == arrow.STRING || f.Type.ID() == arrow.LARGE_STRING || f.Type.ID() == arrow.STRING_VIEW):
			return &TypeNode{Kind: KindScalar, Scalar: TypeJSON}, nil
		}
	}
	return nodeFromArrow(f.Type, depth)
}

func nodeFromArrow(dt arrow.DataType, depth int) (*TypeNode, error) {
	unsupported := func(why string) error {
		return &Error{Code: CodeUnprocessable, Message: fmt.Sprintf("unsupported Arrow type %s%s", dt, why)}
	}
	if depth >= maxTypeDepth {
		return nil, unsupported(fmt.Sprintf(": nested more than %d levels deep", maxTypeDepth))
	}
	scalar := func(t Type) (*TypeNode, error) { return &TypeNode{Kind: KindScalar, Scalar: t}, nil }
	if ext, ok := dt.(arrow.ExtensionType); ok {
		switch ext.ExtensionName() {
		case "arrow.uuid":
			return scalar(TypeUUID)
		case "arrow.json":
			return scalar(TypeJSON)
		}
		return nodeFromArrow(ext.StorageType(), depth)
	}
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return scalar(TypeBoolean)
	case *arrow.Int8Type:
		return scalar(TypeTinyint)
	case *arrow.Int16Type:
		return scalar(TypeSmallint)
	case *arrow.Int32Type:
		return scalar(TypeInteger)
	case *arrow.Int64Type:
		return scalar(TypeBigint)
	case *arrow.Uint8Type:
		return scalar(TypeUTinyint)
	case *arrow.Uint16Type:
		return scalar(TypeUSmallint)
	case *arrow.Uint32Type:
		return scalar(TypeUInteger)
	case *arrow.Uint64Type:
		return scalar(TypeUBigint)
	case *arrow.Float16Type, *arrow.Float32Type:
		return scalar(TypeFloat)
	case *arrow.Float64Type:
		return scalar(TypeDouble)
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return scalar(TypeVarchar)
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return scalar(TypeBlob)
	case *arrow.Date32Type, *arrow.Date64Type:
		return scalar(TypeDate)
	case *arrow.Time32Type, *arrow.Time64Type:
		return scalar(TypeTime)
	case *arrow.TimestampType:
		if dt.TimeZone != "" {
			return scalar(TypeTimestampTZ)
		}
		return scalar([]Type{TypeTimestampS, TypeTimestampMS, TypeTimestamp, TypeTimestampNS}[dt.Unit])
	case *arrow.MonthDayNanoIntervalType, *arrow.DayTimeIntervalType, *arrow.MonthIntervalType, *arrow.DurationType:
		return scalar(TypeInterval)
	case arrow.DecimalType:
		if dt.GetPrecision() > 38 {
			return nil, unsupported(": DuckDB's DECIMAL holds at most 38 digits")
		}
		return &TypeNode{Kind: KindDecimal, Precision: dt.GetPrecision(), Scale: dt.GetScale()}, nil
	case *arrow.DictionaryType:
		return nodeFromArrow(dt.ValueType, depth)
	case *arrow.RunEndEncodedType:
		return nodeFromArrow(dt.Encoded(), depth)
	case *arrow.FixedSizeListType:
		elem, err := nodeFromField(dt.ElemField(), depth+1)
		if err != nil {
			return nil, err
		}
		return &TypeNode{Kind: KindArray, Elem: elem, Size: int(dt.Len())}, nil
	case *arrow.MapType:
		k, err := nodeFromField(dt.KeyField(), depth+1)
		if err != nil {
			return nil, err
		}
		v, err := nodeFromField(dt.ItemField(), depth+1)
		if err != nil {
			return nil, err
		}
		return &TypeNode{Kind: KindMap, Key: k, Value: v}, nil
	case arrow.ListLikeType:
		elem, err := nodeFromField(dt.ElemField(), depth+1)
		if err != nil {
			return nil, err
		}
		return &TypeNode{Kind: KindList, Elem: elem}, nil
	case *arrow.StructType:
		return fieldsFromArrow(KindStruct, dt.Fields(), depth, unsupported)
	case arrow.UnionType:
		return fieldsFromArrow(KindUnion, dt.Fields(), depth, unsupported)
	}
	return nil, unsupported("")
}

func fieldsFromArrow(kind Kind, fields []arrow.Field, depth int, unsupported func(string) error) (*TypeNode, error) {
	if len(fields) == 0 {
		return nil, unsupported(": DuckDB needs at least one member")
	}
	if kind == KindUnion && len(fields) > maxUnionFields {
		return nil, unsupported(fmt.Sprintf(": a UNION has at most %d members", maxUnionFields))
	}
	n := &TypeNode{Kind: kind}
	seen := map[string]bool{}
	for _, f := range fields {
		if f.Name == "" || seen[FoldName(f.Name)] {
			return nil, unsupported(fmt.Sprintf(": member name %s is empty or not unique", quoteForMessage(f.Name)))
		}
		seen[FoldName(f.Name)] = true
		t, err := nodeFromField(f, depth+1)
		if err != nil {
			return nil, err
		}
		n.Fields = append(n.Fields, TypeField{Name: f.Name, Type: t})
	}
	return n, nil
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

	arrow *arrowOf // made once for a table's schema version (withArrow); copies share it
}

// arrowOf is an Arrow schema and the columns it was made of.
type arrowOf struct {
	columns []Column
	schema  *arrow.Schema
}

// Arrow returns the Arrow schema of batches written under s: one nullable field per
// column, named as the column, typed by Type.Arrow. For a table's schema version, and
// any copy of it whose columns are unchanged, it is one schema made once and shared
// (treat it as immutable, as Arrow schemas are): an ingest request builds none.
func (s *Schema) Arrow() *arrow.Schema {
	if a := s.arrow; a != nil && slices.Equal(a.columns, s.Columns) {
		return a.schema
	}
	fields := make([]arrow.Field, len(s.Columns))
	for i, c := range s.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type.Arrow(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// withArrow returns s with its Arrow schema made, for Arrow to share.
func (s *Schema) withArrow() *Schema {
	s.arrow = &arrowOf{columns: slices.Clone(s.Columns), schema: s.Arrow()}
	return s
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
