package ingest

import (
	"errors"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// This file holds the builders of nested columns: T[] and T[n] from JSON arrays, STRUCT
// from JSON objects (members matched by name, exact then case-insensitive; missing ones
// NULL), MAP from JSON objects (member names are the keys, read as the key type reads a
// JSON string), UNION from any value the first member type in declaration order takes.
// In CSV a nested field is that JSON text, a UNION field its member's text (docs/design.md,
// "Column types"). Errors name the
// path inside the value in store.Error.Column: "geometry.coordinates[1]", list and array
// positions counted from 0.

// inside prefixes the path of err (a *store.Error's Column) with seg, and returns err.
func inside(err error, seg string) error {
	var e *store.Error
	if errors.As(err, &e) {
		switch {
		case e.Column == "":
			e.Column = seg
		case e.Column[0] == '[':
			e.Column = seg + e.Column
		default:
			e.Column = seg + "." + e.Column
		}
	}
	return err
}

// jsonText parses CSV text s as one JSON value, for a nested column's CSV form.
func jsonText(s string) (jsonValue, error) {
	sc := newJSONScanner([]byte(s), false)
	if err := sc.skipSpace(); err != nil {
		return jsonValue{}, err
	}
	v, err := sc.value(0)
	if err == nil {
		err = sc.skipSpace()
	}
	if err != nil || sc.p != len(sc.s) {
		return jsonValue{}, valueError("value " + quoteValue(s) + " is not JSON text, the CSV form of nested columns")
	}
	return v, nil
}

// jsonIter reads the elements of a JSON array text or the members of a JSON object text
// that the scanner has already validated, one at a time; a builder keeps one, so that
// reading nested values allocates nothing but what unescaping needs.
type jsonIter struct {
	sc      jsonScanner
	started bool
}

// reset starts reading the composite text.
func (it *jsonIter) reset(text string) {
	it.sc = jsonScanner{s: text, p: 1, line: 1, buf: it.sc.buf}
	it.started = false
}

// next returns the next element (name "") or member; ok is false after the last.
func (it *jsonIter) next(object bool) (name string, v jsonValue, ok bool, err error) {
	sc := &it.sc
	if err = sc.skipSpace(); err != nil {
		return
	}
	if c := sc.s[sc.p]; c == ']' || c == '}' {
		return
	}
	if it.started {
		sc.p++ // ','
		if err = sc.skipSpace(); err != nil {
			return
		}
	}
	it.started = true
	if object {
		raw, escaped, err := sc.scanString()
		if err != nil {
			return "", v, false, err
		}
		if name = raw; escaped {
			name = sc.unescape(raw)
		}
		if err = sc.skipSpace(); err != nil {
			return "", v, false, err
		}
		sc.p++ // ':'
		if err = sc.skipSpace(); err != nil {
			return "", v, false, err
		}
	}
	v, err = sc.value(0)
	return name, v, err == nil, err
}

// slotBudget is the number of child slots the NULLs of fixed-size lists may still add
// during one decode; past it a list or map value is refused with CodeTooLarge.
type slotBudget struct{ left int64 }

// attach gives every T[n] builder under b this budget, and every list and map builder
// the duty to check it.
func (s *slotBudget) attach(b columnBuilder) {
	switch b := b.(type) {
	case *listBuilder:
		b.budget = s
		s.attach(b.elem)
	case *structBuilder:
		for _, f := range b.fields {
			s.attach(f)
		}
	case *mapBuilder:
		b.budget = s
		s.attach(b.keys)
		s.attach(b.values)
	case *unionBuilder:
		for _, f := range b.fields {
			s.attach(f)
		}
	}
}

// spent reports, as a CodeTooLarge error, a budget that is used up; nil otherwise.
func (s *slotBudget) spent() error {
	if s == nil || s.left >= 0 {
		return nil
	}
	return &store.Error{Code: store.CodeTooLarge, Message: "the NULL fixed-size lists of the body take more memory than one request may use; send smaller commits"}
}

// nestedText appends CSV text to a nested builder through its JSON form.
func nestedText(b columnBuilder, s string) error {
	v, err := jsonText(s)
	if err != nil {
		return err
	}
	return b.appendJSON(v)
}

// listBuilder builds T[] (list<l: T>) and, with size > 0, T[n] (fixed_size_list) columns.
type listBuilder struct {
	typ     store.Type
	size    int
	budget  *slotBudget
	it      jsonIter
	elem    columnBuilder
	offsets []int32
	valid   validity
}

func (b *listBuilder) appendNull() {
	if b.size > 0 {
		if b.budget != nil {
			b.budget.left -= int64(b.size)
		}
		for range b.size {
			b.elem.appendNull()
		}
	}
	b.offsets = append(b.offsets, b.offsets[len(b.offsets)-1]+int32(b.size))
	b.valid.add(false)
}

func (b *listBuilder) appendText(s string) error { return nestedText(b, s) }

func (b *listBuilder) appendJSON(v jsonValue) error {
	if done, err := openNestedJSON(b, v, jsonArray, b.typ); done {
		return err
	}
	n := 0
	b.it.reset(v.text)
	for {
		_, e, ok, err := b.it.next(false)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		n++
		if b.size > 0 && n > b.size {
			continue
		}
		if err := b.elem.appendJSON(e); err != nil {
			return inside(err, "["+strconv.Itoa(n-1)+"]")
		}
		if err := b.budget.spent(); err != nil {
			return err
		}
	}
	if b.size > 0 && n != b.size {
		return valueError("JSON array of " + strconv.Itoa(n) + " elements cannot be stored in a " + string(b.typ) + " column")
	}
	if int64(b.offsets[len(b.offsets)-1])+int64(n) > 1<<31-1 {
		return &store.Error{Code: store.CodeTooLarge, Message: "column holds more than 2^31 list elements"}
	}
	b.offsets = append(b.offsets, b.offsets[len(b.offsets)-1]+int32(n))
	b.valid.add(true)
	return nil
}

func (b *listBuilder) finish() arrow.Array {
	dt := b.typ.Arrow()
	child := b.elem.finish()
	defer child.Release()
	n := len(b.offsets) - 1
	buffers := []*memory.Buffer{b.valid.buffer(), memory.NewBufferBytes(arrow.GetBytes(b.offsets))}
	if b.size > 0 {
		buffers = buffers[:1]
	}
	data := array.NewData(dt, n, buffers, []arrow.ArrayData{child.Data()}, b.valid.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// structBuilder builds STRUCT columns from JSON objects.
type structBuilder struct {
	typ    store.Type
	it     jsonIter
	names  []string
	fields []columnBuilder
	set    []int // row that last set each member
	row    int
	valid  validity
}

func (b *structBuilder) appendNull() {
	for _, f := range b.fields {
		f.appendNull()
	}
	b.valid.add(false)
}

func (b *structBuilder) appendText(s string) error { return nestedText(b, s) }

func (b *structBuilder) member(name string) int {
	for i, n := range b.names {
		if n == name {
			return i
		}
	}
	for i, n := range b.names {
		if store.SameName(n, name) {
			return i
		}
	}
	return -1
}

func (b *structBuilder) appendJSON(v jsonValue) error {
	if done, err := openNestedJSON(b, v, jsonObject, b.typ); done {
		return err
	}
	b.row++
	b.it.reset(v.text)
	for k := 0; ; k++ {
		name, m, ok, err := b.it.next(true)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		i := k
		if i >= len(b.names) || b.names[i] != name {
			i = b.member(name)
		}
		if i < 0 {
			return inside(valueError("unknown member "+quoteValue(name)+" of "+cut(string(b.typ))), name)
		}
		if b.set[i] == b.row {
			return inside(valueError("member "+quoteValue(name)+" is set a second time"), b.names[i])
		}
		b.set[i] = b.row
		if err := b.fields[i].appendJSON(m); err != nil {
			return inside(err, b.names[i])
		}
	}
	for i, r := range b.set {
		if r != b.row {
			b.fields[i].appendNull()
		}
	}
	b.valid.add(true)
	return nil
}

func (b *structBuilder) finish() arrow.Array {
	children := make([]arrow.ArrayData, len(b.fields))
	for i, f := range b.fields {
		a := f.finish()
		defer a.Release()
		children[i] = a.Data()
	}
	data := array.NewData(b.typ.Arrow(), b.valid.n, []*memory.Buffer{b.valid.buffer()}, children, b.valid.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// mapBuilder builds MAP columns from JSON objects, one entry per member; a key may not
// repeat within one value.
type mapBuilder struct {
	typ          store.Type
	budget       *slotBudget
	it           jsonIter
	seen         map[string]bool
	keys, values columnBuilder
	offsets      []int32
	valid        validity
}

func (b *mapBuilder) appendNull() {
	b.offsets = append(b.offsets, b.offsets[len(b.offsets)-1])
	b.valid.add(false)
}

func (b *mapBuilder) appendText(s string) error { return nestedText(b, s) }

func (b *mapBuilder) appendJSON(v jsonValue) error {
	if done, err := openNestedJSON(b, v, jsonObject, b.typ); done {
		return err
	}
	n := 0
	clear(b.seen)
	b.it.reset(v.text)
	for {
		name, m, ok, err := b.it.next(true)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		at := func() string { return "[" + quoteValue(name) + "]" }
		if b.seen[name] {
			return inside(valueError("map key "+quoteValue(name)+" appears twice"), at())
		}
		b.seen[name] = true
		n++
		if err := b.keys.appendJSON(jsonValue{kind: jsonString, text: name}); err != nil {
			return inside(err, at())
		}
		if err := b.values.appendJSON(m); err != nil {
			return inside(err, at())
		}
		if err := b.budget.spent(); err != nil {
			return err
		}
	}
	b.offsets = append(b.offsets, b.offsets[len(b.offsets)-1]+int32(n))
	b.valid.add(true)
	return nil
}

func (b *mapBuilder) finish() arrow.Array {
	dt := b.typ.Arrow().(*arrow.MapType)
	k, v := b.keys.finish(), b.values.finish()
	defer k.Release()
	defer v.Release()
	entries := array.NewData(dt.Elem(), k.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{k.Data(), v.Data()}, 0, 0)
	defer entries.Release()
	data := array.NewData(dt, len(b.offsets)-1, []*memory.Buffer{b.valid.buffer(), memory.NewBufferBytes(arrow.GetBytes(b.offsets))}, []arrow.ArrayData{entries}, b.valid.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// unionBuilder builds UNION columns (sparse_union): a value goes to the first member, in
// declaration order, whose type takes it; NULL is a NULL of the first member.
type unionBuilder struct {
	typ     store.Type
	members []store.Type
	fields  []columnBuilder
	codes   []int8
}

func (b *unionBuilder) appendNull() {
	for _, f := range b.fields {
		f.appendNull()
	}
	b.codes = append(b.codes, 0)
}

// appendText appends a CSV field as the first member whose type reads the text: a
// UNION's CSV form is its member's.
func (b *unionBuilder) appendText(s string) error {
	return b.appendFirst(func(c columnBuilder) error { return c.appendText(s) },
		func() error { return valueError("value " + quoteValue(s) + " fits no member of " + cut(string(b.typ))) })
}

func (b *unionBuilder) appendJSON(v jsonValue) error {
	if v.kind == jsonNull {
		b.appendNull()
		return nil
	}
	return b.appendFirst(func(c columnBuilder) error { return c.appendJSON(v) },
		func() error { return jsonTypeError(v, b.typ) })
}

// appendFirst appends with add to the first member whose type takes the value, tried on
// a scratch builder first, and NULL to the others; none taking it is refuse's error.
func (b *unionBuilder) appendFirst(add func(columnBuilder) error, refuse func() error) error {
	for k, t := range b.members {
		probe, err := newColumnBuilder(t)
		if err != nil {
			return err
		}
		if add(probe) != nil {
			continue
		}
		for i, f := range b.fields {
			if i == k {
				if err := add(f); err != nil {
					return err
				}
			} else {
				f.appendNull()
			}
		}
		b.codes = append(b.codes, int8(k))
		return nil
	}
	return refuse()
}

func (b *unionBuilder) finish() arrow.Array {
	children := make([]arrow.ArrayData, len(b.fields))
	for i, f := range b.fields {
		a := f.finish()
		defer a.Release()
		children[i] = a.Data()
	}
	data := array.NewData(b.typ.Arrow(), len(b.codes), []*memory.Buffer{nil, memory.NewBufferBytes(arrow.GetBytes(b.codes))}, children, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// newNestedBuilder returns the builder of a nested or non-core scalar type t.
func newNestedBuilder(t store.Type) (columnBuilder, error) {
	n := t.Node()
	child := func(c *store.TypeNode) (columnBuilder, error) { return newColumnBuilder(c.Type()) }
	switch n.Kind {
	case store.KindList, store.KindArray:
		elem, err := child(n.Elem)
		if err != nil {
			return nil, err
		}
		return &listBuilder{typ: t, size: n.Size, elem: elem, offsets: []int32{0}}, nil
	case store.KindStruct, store.KindUnion:
		var fields []columnBuilder
		var names []string
		var members []store.Type
		for _, f := range n.Fields {
			fb, err := child(f.Type)
			if err != nil {
				return nil, err
			}
			fields, names, members = append(fields, fb), append(names, f.Name), append(members, f.Type.Type())
		}
		if n.Kind == store.KindUnion {
			return &unionBuilder{typ: t, members: members, fields: fields}, nil
		}
		return &structBuilder{typ: t, names: names, fields: fields, set: make([]int, len(fields))}, nil
	case store.KindMap:
		k, err := child(n.Key)
		if err != nil {
			return nil, err
		}
		v, err := child(n.Value)
		if err != nil {
			return nil, err
		}
		return &mapBuilder{typ: t, seen: map[string]bool{}, keys: k, values: v, offsets: []int32{0}}, nil
	case store.KindEnum:
		return newEnumBuilder(t), nil
	}
	return nil, store.Errorf(store.CodeInternal, "no ingest builder for column type %s", t)
}
