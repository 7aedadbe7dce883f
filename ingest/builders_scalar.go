package ingest

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
)

// This file holds the builders of the scalar types beyond the flat core of builders.go:
// HUGEINT and UHUGEINT, UUID, JSON, ENUM and INTERVAL (docs/design.md, "Column types").

// hugeintBuilder builds HUGEINT and UHUGEINT columns, both exported by DuckDB as
// decimal128(38,0) holding the 128-bit integer: text and JSON numbers or strings holding
// a whole number, HUGEINT from -2^127 to 2^127-1, UHUGEINT from 0 to 2^127-1 (DuckDB's
// Arrow export cannot send larger UHUGEINT values).
type hugeintBuilder struct {
	fixedBuilder[decimal128.Num]
	typ store.Type
}

var (
	maxHugeint = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 127), big.NewInt(1))
	minHugeint = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 127))
)

func (b *hugeintBuilder) appendText(s string) error { return b.parse(trimSpace(s), shown{text: s}) }

func (b *hugeintBuilder) appendJSON(v jsonValue) error {
	return appendParsedJSON(b, v, b.typ, b.parse, jsonNumber, jsonString)
}

func (b *hugeintBuilder) parse(s string, in shown) error {
	v, res := parseInteger(s, intRange{math.MinInt64, math.MaxInt64})
	switch {
	case res == integerOK && (b.typ == store.TypeHugeint || int64(v) >= 0):
		b.push(decimal128.FromI64(int64(v)))
		return nil
	case res == integerFractional:
		return valueError("value " + in.String() + " is not a whole number, as " + string(b.typ) + " needs")
	}
	n, ok := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
	if !ok {
		return notA(in, b.typ)
	}
	return b.pushBig(n, in)
}

// pushBig appends n when it is in the type's range.
func (b *hugeintBuilder) pushBig(n *big.Int, in shown) error {
	lo := minHugeint
	if b.typ == store.TypeUHugeint {
		lo = new(big.Int)
	}
	if n.Cmp(lo) < 0 || n.Cmp(maxHugeint) > 0 {
		return valueError("value " + in.String() + " is out of range for " + string(b.typ))
	}
	b.push(int128(n))
	return nil
}

// int128 returns n, within -2^127 to 2^127-1, as the two's-complement 128-bit value
// (decimal128.FromBigInt refuses -2^127).
func int128(n *big.Int) decimal128.Num {
	u := new(big.Int).Set(n)
	if u.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	lo := new(big.Int).And(u, new(big.Int).SetUint64(^uint64(0))).Uint64()
	return decimal128.New(int64(new(big.Int).Rsh(u, 64).Uint64()), lo)
}

// uuidBuilder builds UUID columns (utf8 in Arrow, as DuckDB exports them): text in any
// form github.com/google/uuid parses (RFC 9562 hyphenated, 32 hex digits, braces,
// "urn:uuid:"), stored in the canonical lower-case hyphenated form.
type uuidBuilder struct{ binaryBuilder }

func (b *uuidBuilder) appendText(s string) error { return b.parse(trimSpace(s), shown{text: s}) }

func (b *uuidBuilder) appendJSON(v jsonValue) error {
	return appendParsedJSON(b, v, store.TypeUUID, b.parse, jsonString)
}

func (b *uuidBuilder) parse(s string, in shown) error {
	u, err := uuid.Parse(s)
	if err != nil {
		return notA(in, store.TypeUUID)
	}
	return b.push(u.String())
}

// jsonTextBuilder builds JSON columns (utf8 in Arrow): in a JSON body any JSON value, stored
// as its JSON text (a string as a JSON string literal); in CSV the field must be JSON
// text (RFC 8259).
type jsonTextBuilder struct{ binaryBuilder }

func (b *jsonTextBuilder) appendText(s string) error {
	if !json.Valid([]byte(s)) {
		return valueError("value " + quoteValue(s) + " is not JSON text")
	}
	return b.push(s)
}

func (b *jsonTextBuilder) appendJSON(v jsonValue) error {
	switch v.kind {
	case jsonNull:
		b.appendNull()
		return nil
	case jsonString:
		raw, _ := json.Marshal(v.text)
		return b.push(string(raw))
	case jsonTrue:
		return b.push("true")
	case jsonFalse:
		return b.push("false")
	}
	return b.push(v.text)
}

// enumBuilder builds ENUM columns: text and JSON strings that are one of the values;
// the Arrow array is dictionary<utf8> over the ENUM's values in declared order, indexed
// as store.TypeNode.Arrow says.
type enumBuilder struct {
	typ     store.Type
	dt      *arrow.DictionaryType
	index   map[string]uint32
	values  []string
	indices []uint32
	valid   validity
}

func newEnumBuilder(t store.Type) *enumBuilder {
	n := t.Node()
	b := &enumBuilder{typ: t, dt: t.Arrow().(*arrow.DictionaryType), index: make(map[string]uint32, len(n.Values)), values: n.Values}
	for i, v := range n.Values {
		b.index[v] = uint32(i)
	}
	return b
}

func (b *enumBuilder) appendNull() {
	b.indices = append(b.indices, 0)
	b.valid.add(false)
}

func (b *enumBuilder) appendText(s string) error { return b.parse(s, shown{text: s}) }

func (b *enumBuilder) appendJSON(v jsonValue) error {
	return appendParsedJSON(b, v, b.typ, b.parse, jsonString)
}

func (b *enumBuilder) parse(s string, in shown) error {
	i, ok := b.index[s]
	if !ok {
		return valueError("value " + in.String() + " is not one of the values of " + cut(string(b.typ)))
	}
	b.indices = append(b.indices, i)
	b.valid.add(true)
	return nil
}

func (b *enumBuilder) finish() arrow.Array {
	var idx []byte
	switch b.dt.IndexType.ID() {
	case arrow.UINT8:
		v := make([]uint8, len(b.indices))
		for i, x := range b.indices {
			v[i] = uint8(x)
		}
		idx = arrow.GetBytes(v)
	case arrow.UINT16:
		v := make([]uint16, len(b.indices))
		for i, x := range b.indices {
			v[i] = uint16(x)
		}
		idx = arrow.GetBytes(v)
	default:
		idx = arrow.GetBytes(b.indices)
	}
	dict := enumDictionary(b.values)
	defer dict.Release()
	data := array.NewData(b.dt, len(b.indices), []*memory.Buffer{b.valid.buffer(), memory.NewBufferBytes(idx)}, nil, b.valid.nulls, 0)
	data.SetDictionary(dict.Data())
	defer data.Release()
	return array.MakeFromData(data)
}

// enumDictionary returns the values of an ENUM as a utf8 array.
func enumDictionary(values []string) arrow.Array {
	offsets := make([]int32, 1, len(values)+1)
	var sb strings.Builder
	for _, v := range values {
		sb.WriteString(v)
		offsets = append(offsets, int32(sb.Len()))
	}
	return newArray(arrow.BinaryTypes.String, len(values), []*memory.Buffer{nil, memory.NewBufferBytes(arrow.GetBytes(offsets)), memory.NewBufferBytes([]byte(sb.String()))}, 0)
}

// intervalBuilder builds INTERVAL columns (month_day_nano_interval, nanoseconds a
// multiple of 1000 as DuckDB stores microseconds) from ISO 8601 durations (parseInterval).
type intervalBuilder struct {
	fixedBuilder[arrow.MonthDayNanoInterval]
}

func (b *intervalBuilder) appendText(s string) error { return b.parse(trimSpace(s), shown{text: s}) }

func (b *intervalBuilder) appendJSON(v jsonValue) error {
	return appendParsedJSON(b, v, store.TypeInterval, b.parse, jsonString)
}

func (b *intervalBuilder) parse(s string, in shown) error {
	v, ok := parseInterval(s)
	if !ok {
		return valueError("value " + in.String() + " is not an INTERVAL (ISO 8601 duration: P[nY][nM][nW][nD][T[nH][nM][n[.ffffff]S]], each n optionally signed)")
	}
	b.push(v)
	return nil
}

// parseInterval reads an ISO 8601 duration (ISO 8601-1:2019, 5.5.2) with the sign
// extension PostgreSQL's iso_8601 interval style writes: each number may carry a sign,
// and only the seconds may have a fraction (up to six digits); a leading "-" negates the
// whole duration. Years and months add to
// the months, weeks and days to the days, hours, minutes and seconds to the
// microseconds, each checked for overflow.
func parseInterval(s string) (arrow.MonthDayNanoInterval, bool) {
	var v arrow.MonthDayNanoInterval
	negate := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if len(s) < 2 || (s[0] != 'P' && s[0] != 'p') {
		return v, false
	}
	s = s[1:]
	var months, days, micros int64
	inTime := false
	seen := ""
	for s != "" {
		if s[0] == 'T' || s[0] == 't' {
			if inTime || len(s) == 1 {
				return v, false
			}
			inTime, s = true, s[1:]
			continue
		}
		i := 0
		if s[0] == '-' || s[0] == '+' {
			i++
		}
		for i < len(s) && (isDigit(s[i]) || s[i] == '.') {
			i++
		}
		if i == len(s) || i == 0 {
			return v, false
		}
		num, unit := s[:i], s[i]|0x20
		s = s[i+1:]
		key := string(unit)
		if inTime {
			key = "t" + key
		}
		if strings.Contains(seen, key+",") {
			return v, false
		}
		seen += key + ","
		if key == "ts" {
			us, ok := parseSeconds(num)
			if !ok || !addInto(&micros, us, 1) {
				return v, false
			}
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return v, false
		}
		var ok bool
		switch key {
		case "y":
			ok = addInto(&months, n, 12)
		case "m":
			ok = addInto(&months, n, 1)
		case "w":
			ok = addInto(&days, n, 7)
		case "d":
			ok = addInto(&days, n, 1)
		case "th":
			ok = addInto(&micros, n, 3600*microsPerSecond)
		case "tm":
			ok = addInto(&micros, n, 60*microsPerSecond)
		}
		if !ok {
			return v, false
		}
	}
	if seen == "" || months != int64(int32(months)) || days != int64(int32(days)) || micros > math.MaxInt64/1000 || micros < math.MinInt64/1000 {
		return v, false
	}
	if negate {
		months, days, micros = -months, -days, -micros
	}
	return arrow.MonthDayNanoInterval{Months: int32(months), Days: int32(days), Nanoseconds: micros * 1000}, true
}

// parseSeconds reads "[±]S[.ffffff]" as microseconds.
func parseSeconds(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 6 || strings.ContainsAny(frac, "+-.") {
		return 0, false
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/microsPerSecond {
		return 0, false
	}
	us := w * microsPerSecond
	if frac != "" {
		f, err := strconv.ParseInt((frac + "00000")[:6], 10, 64)
		if err != nil {
			return 0, false
		}
		us += f
	}
	if neg {
		us = -us
	}
	return us, true
}

// addInto adds n×unit to *acc, reporting false on overflow.
func addInto(acc *int64, n, unit int64) bool {
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return false
	}
	p := n * unit
	if (p > 0 && *acc > math.MaxInt64-p) || (p < 0 && *acc < math.MinInt64-p) {
		return false
	}
	*acc += p
	return true
}
