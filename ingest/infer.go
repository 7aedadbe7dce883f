package ingest

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
)

// This file infers the columns of a table created from its first body (?create=true),
// the way DuckDB's CSV sniffer does, but over every row rather than a sample. Every
// type inferred is one the decoder then accepts for every value of the body, so Infer
// followed by Decode of the same body never fails on a value.

// textTypes is the set of candidate types for a CSV column: the types every non-empty
// value seen so far parses as (after trimming spaces and tabs), tried in DuckDB's
// sniffer order BOOLEAN, BIGINT, DOUBLE, DATE, TIMESTAMP, TIMESTAMPTZ, else VARCHAR.
type textTypes struct {
	cands uint8
	seen  bool // a non-empty value was seen
}

const (
	candBoolean uint8 = 1 << iota
	candBigint
	candDouble
	candDate
	candTimestamp
	candTimestampTZ

	candTemporal = candDate | candTimestamp | candTimestampTZ
)

// allTextTypes is the starting point: every candidate open, nothing seen.
var allTextTypes = textTypes{cands: candBoolean | candBigint | candDouble | candTemporal}

var int64Range = intRange{math.MinInt64, math.MaxInt64}

// observe narrows the candidates by one CSV field. Empty fields are NULL and narrow
// nothing. A field that is not valid UTF-8 is a CodeUnprocessable error, since no
// inferred type could hold it.
//
// BOOLEAN takes "true" and "false" in any case; BIGINT takes an optional sign and
// digits within int64 (so "1.0" infers DOUBLE); DOUBLE takes any number, "nan", "inf"
// and "infinity" (an integer beyond int64 therefore infers DOUBLE, as in DuckDB's
// sniffer, at the cost of precision past 2^53); DATE takes "YYYY-MM-DD"; TIMESTAMP
// takes ISO forms without an offset (a date alone is midnight); TIMESTAMPTZ takes ISO
// forms with or without an offset (without one, UTC).
func (t *textTypes) observe(f string) error {
	if f == "" {
		return nil
	}
	if !utf8.ValidString(f) {
		return valueError("value " + quoteValue(f) + " is not valid UTF-8")
	}
	t.seen = true
	if t.cands == 0 {
		return nil
	}
	v := trimSpace(f)
	if t.cands&candBoolean != 0 && !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
		t.cands &^= candBoolean
	}
	if t.cands&candBigint != 0 {
		if _, res := parseInteger(v, int64Range); res != integerOK || !isPlainInteger(v) {
			t.cands &^= candBigint
		}
	}
	if t.cands&candDouble != 0 {
		if _, ok, finite := parseFloat(v, 64); !ok || !finite {
			t.cands &^= candDouble
		}
	}
	if t.cands&candTemporal != 0 {
		t.cands &^= temporalMisses(v)
	}
	return nil
}

// temporalMisses returns the temporal candidates s does not parse as.
func temporalMisses(s string) uint8 {
	_, form, ok := parseTimestamp(s)
	switch {
	case !ok:
		return candTemporal
	case form == formLocal:
		return candDate
	case form == formOffset:
		return candDate | candTimestamp
	}
	return 0
}

// choose returns the first candidate left in sniffer order, or VARCHAR; a column
// without values is VARCHAR.
func (t textTypes) choose() store.Type {
	switch {
	case !t.seen:
		return store.TypeVarchar
	case t.cands&candBoolean != 0:
		return store.TypeBoolean
	case t.cands&candBigint != 0:
		return store.TypeBigint
	case t.cands&candDouble != 0:
		return store.TypeDouble
	}
	return chooseTemporal(t.cands)
}

// chooseTemporal returns DATE, TIMESTAMP or TIMESTAMPTZ, the first left in cands, or
// VARCHAR.
func chooseTemporal(cands uint8) store.Type {
	switch {
	case cands&candDate != 0:
		return store.TypeDate
	case cands&candTimestamp != 0:
		return store.TypeTimestamp
	case cands&candTimestampTZ != 0:
		return store.TypeTimestampTZ
	}
	return store.TypeVarchar
}

// jsonGroup is the family of JSON values a field has held; the families do not mix,
// because no column type takes values of two of them (VARCHAR takes strings and
// nested JSON, but not numbers or booleans).
type jsonGroup uint8

const (
	groupNone jsonGroup = iota
	groupBoolean
	groupNumber
	groupText // strings, objects and arrays
)

// String names the group as error messages do.
func (g jsonGroup) String() string {
	switch g {
	case groupBoolean:
		return "booleans"
	case groupNumber:
		return "numbers"
	}
	return "strings or nested values"
}

// jsonField is what inference knows about one JSON field.
type jsonField struct {
	name     string
	group    jsonGroup
	double   bool  // a number needs DOUBLE: a fraction, an exponent, or beyond int64
	nested   bool  // an object or array was seen
	strings  bool  // a string was seen
	temporal uint8 // temporal candidates left for its strings
	shape    jsonShape
}

// jsonInferVisitor infers columns from JSON rows: one column per field name, in order
// of first appearance across rows, names merged case-insensitively as Decode matches
// them. Types: only booleans → BOOLEAN; only integers within int64 → BIGINT; numbers
// with a fraction or exponent, or integers beyond int64 → DOUBLE (a number beyond
// DOUBLE's range is rejected); strings → DATE, TIMESTAMP or TIMESTAMPTZ when every
// string parses as one (see textTypes), else VARCHAR; only objects → STRUCT or MAP, only
// arrays → LIST (jsonShape, in infer_nested.go); objects or arrays mixed with strings or
// with each other → VARCHAR holding their JSON text; only nulls → VARCHAR. A field mixing
// booleans, numbers and strings is CodeUnprocessable at the first value that mixes.
type jsonInferVisitor struct {
	fields []jsonField
	byName map[string]int
	seen   []int // row number that last set each field
	row    int
}

// newJSONInferVisitor returns a visitor that has seen no rows.
func newJSONInferVisitor() *jsonInferVisitor {
	return &jsonInferVisitor{byName: make(map[string]int)}
}

func (v *jsonInferVisitor) startRow(row int) error {
	v.row = row
	return nil
}

func (v *jsonInferVisitor) endRow() {}

// member adds one value to what is known of its field. Errors: a field set twice in
// one object, values of two groups, a number past DOUBLE's range.
func (v *jsonInferVisitor) member(name string, val jsonValue) error {
	fi, err := v.field(name)
	if err != nil {
		return err
	}
	f := &v.fields[fi]
	if v.seen[fi] == v.row {
		return &store.Error{Code: store.CodeUnprocessable, Column: f.name,
			Message: "field " + quoteValue(name) + " appears a second time in the same object (names are case-insensitive)"}
	}
	v.seen[fi] = v.row
	var g jsonGroup
	switch val.kind {
	case jsonNull:
		return nil
	case jsonTrue, jsonFalse:
		g = groupBoolean
	case jsonNumber:
		g = groupNumber
		if _, res := parseInteger(val.text, int64Range); res != integerOK || strings.ContainsAny(val.text, ".eE") {
			f.double = true
			if _, _, finite := parseFloat(val.text, 64); !finite {
				return &store.Error{Code: store.CodeUnprocessable, Column: f.name,
					Message: "number " + val.shown().String() + " is out of range for DOUBLE"}
			}
		}
	case jsonString:
		g = groupText
		f.strings = true
		f.temporal &^= temporalMisses(val.text)
	default:
		g = groupText
		f.nested = true
		f.shape.add(val)
	}
	if f.group == groupNone {
		f.group = g
	} else if f.group != g {
		return &store.Error{Code: store.CodeUnprocessable, Column: f.name,
			Message: "field " + quoteValue(f.name) + " holds " + f.group.String() + " and then JSON " + val.kind.String() + " " + val.shown().String() +
				"; no column type takes both, so create the table with explicit column types"}
	}
	return nil
}

// field returns the index of the field name belongs to, adding a new one.
func (v *jsonInferVisitor) field(name string) (int, error) {
	if fi, ok := v.byName[name]; ok {
		return fi, nil
	}
	for fi := range v.fields {
		if store.SameName(v.fields[fi].name, name) {
			v.byName[name] = fi
			return fi, nil
		}
	}
	if err := store.ValidateColumnName(name); err != nil {
		return 0, err
	}
	v.fields = append(v.fields, jsonField{name: name, temporal: candTemporal})
	v.seen = append(v.seen, 0)
	v.byName[name] = len(v.fields) - 1
	return len(v.fields) - 1, nil
}

// specs returns the inferred columns; a body without fields is CodeUnprocessable.
func (v *jsonInferVisitor) specs() ([]store.ColumnSpec, error) {
	if len(v.fields) == 0 {
		return nil, store.Errorf(store.CodeUnprocessable, "the body has no fields to infer columns from")
	}
	specs := make([]store.ColumnSpec, len(v.fields))
	for i, f := range v.fields {
		t := store.TypeVarchar
		switch {
		case f.group == groupBoolean:
			t = store.TypeBoolean
		case f.group == groupNumber && f.double:
			t = store.TypeDouble
		case f.group == groupNumber:
			t = store.TypeBigint
		case f.group == groupText && !f.nested:
			t = chooseTemporal(f.temporal)
		case !f.strings && f.shape.kind != shapeMixed:
			t = f.shape.node(0).Type()
		}
		specs[i] = store.ColumnSpec{Name: f.name, Type: string(t)}
	}
	return specs, nil
}

// arrowSpecs returns the columns of an Arrow schema: each field's name checked with
// store.ValidateColumnName and unique case-insensitively (CodeInvalid), its type from
// store.TypeFromArrow (CodeUnprocessable for types no column holds, including decimals
// whose precision is outside 1 to 38).
func arrowSpecs(schema *arrow.Schema) ([]store.ColumnSpec, error) {
	if schema.NumFields() == 0 {
		return nil, store.Errorf(store.CodeUnprocessable, "the Arrow schema has no fields to infer columns from")
	}
	specs := make([]store.ColumnSpec, schema.NumFields())
	for i, f := range schema.Fields() {
		if err := store.ValidateColumnName(f.Name); err != nil {
			return nil, err
		}
		for _, prev := range specs[:i] {
			if store.SameName(prev.Name, f.Name) {
				return nil, &store.Error{Code: store.CodeInvalid, Column: f.Name,
					Message: "Arrow field " + quoteValue(f.Name) + " repeats " + quoteValue(prev.Name) + " (column names are case-insensitive)"}
			}
		}
		t, err := store.TypeFromArrowField(f)
		if err == nil {
			// TypeFromArrow does not check a decimal's precision and scale.
			t, err = store.ParseType(string(t))
		}
		if err != nil {
			return nil, &store.Error{Code: store.CodeUnprocessable, Column: f.Name,
				Message: fmt.Sprintf("Arrow type %s has no column type", f.Type), Err: err}
		}
		specs[i] = store.ColumnSpec{Name: f.Name, Type: string(t)}
	}
	return specs, nil
}
