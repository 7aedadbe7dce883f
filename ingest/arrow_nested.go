package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// This file converts nested Arrow arrays, and the encodings that wrap any type (dictionary,
// run-end encoded), to a column's Arrow type by the rules arrowDecoder documents: any list
// layout (list, large_list, list_view, large_list_view, fixed_size_list) → T[], and → T[n]
// when every list holds n values; struct → STRUCT, fields matched by name; map → MAP;
// sparse or dense union → UNION, members matched by name. Children are converted
// recursively; an error names the row and the path inside the value.

// remap rewrites the row of a child's error with where, which maps a 0-based child index
// to the 0-based parent row and the path segment of that child (ok false: no row).
func remap(err error, base int, where func(child int) (row int, seg string, ok bool)) error {
	var e *store.Error
	if !errors.As(err, &e) || e.Row == 0 {
		return err
	}
	row, seg, ok := where(e.Row - 1)
	e.Row = 0
	if ok {
		e.Row = base + row + 1
	}
	if seg != "" {
		return inside(err, seg)
	}
	return err
}

// releaseSome releases the arrays that are not nil.
func releaseSome(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// take returns the values of a at idx (-1 for NULL) as a new array of a's type: a slice
// when idx is one run, arrow-go's compute.TakeArray otherwise, and joined slices of the
// runs for unions, which compute does not take.
func take(a arrow.Array, idx []int) (arrow.Array, error) {
	runs := 1
	for i := 1; i < len(idx); i++ {
		if idx[i] < 0 || idx[i] != idx[i-1]+1 {
			runs++
		}
	}
	switch {
	case len(idx) == 0:
		return array.MakeArrayOfNull(goAllocator, a.DataType(), 0), nil
	case runs == 1 && idx[0] >= 0:
		return array.NewSlice(a, int64(idx[0]), int64(idx[0]+len(idx))), nil
	case holdsUnion(a.DataType()):
		return takeRuns(a, idx)
	}
	vals := make([]int64, len(idx))
	var v validity
	for i, k := range idx {
		vals[i] = int64(max(k, 0))
		v.add(k >= 0)
	}
	indices := newArray(arrow.PrimitiveTypes.Int64, len(idx), []*memory.Buffer{v.buffer(), memory.NewBufferBytes(arrow.GetBytes(vals))}, v.nulls)
	defer indices.Release()
	out, err := compute.TakeArray(compute.WithAllocator(context.Background(), goAllocator), a, indices)
	if err != nil {
		return nil, store.Errorf(store.CodeInternal, "gather %s values: %v", a.DataType(), err)
	}
	return out, nil
}

// takeRuns is take by joining a slice per run of consecutive indices.
func takeRuns(a arrow.Array, idx []int) (arrow.Array, error) {
	var parts []arrow.Array
	defer func() { releaseAll(parts) }()
	for i := 0; i < len(idx); {
		j := i + 1
		if idx[i] < 0 {
			for j < len(idx) && idx[j] < 0 {
				j++
			}
			parts = append(parts, array.MakeArrayOfNull(goAllocator, a.DataType(), j-i))
		} else {
			for j < len(idx) && idx[j] == idx[j-1]+1 {
				j++
			}
			parts = append(parts, array.NewSlice(a, int64(idx[i]), int64(idx[i]+j-i)))
		}
		i = j
	}
	return concatenate(parts, a.DataType())
}

// holdsUnion reports whether dt is or holds a union type.
func holdsUnion(dt arrow.DataType) bool {
	if _, ok := dt.(arrow.UnionType); ok {
		return true
	}
	if n, ok := dt.(arrow.NestedType); ok {
		for _, f := range n.Fields() {
			if holdsUnion(f.Type) {
				return true
			}
		}
	}
	return false
}

// convertDictionary converts the dictionary's values, then picks them by index.
func convertDictionary(d *array.Dictionary, t store.Type, base int) (arrow.Array, error) {
	vals, err := convertArrow(d.Dictionary(), t, 0)
	if err != nil {
		return nil, remap(err, base, func(k int) (int, string, bool) {
			for i := 0; i < d.Len(); i++ {
				if d.IsValid(i) && d.GetValueIndex(i) == k {
					return i, "", true
				}
			}
			return 0, "", false
		})
	}
	defer vals.Release()
	idx := make([]int, d.Len())
	for i := range idx {
		idx[i] = -1
		if d.IsValid(i) {
			idx[i] = d.GetValueIndex(i)
		}
	}
	return take(vals, idx)
}

// convertRunEnd converts the run values, then repeats each over its run.
func convertRunEnd(r *array.RunEndEncoded, t store.Type, base int) (arrow.Array, error) {
	idx := make([]int, r.Len())
	for i := range idx {
		idx[i] = r.GetPhysicalIndex(i)
	}
	vals, err := convertArrow(r.Values(), t, 0)
	if err != nil {
		return nil, remap(err, base, func(p int) (int, string, bool) {
			for i, k := range idx {
				if k == p {
					return i, "", true
				}
			}
			return 0, "", false
		})
	}
	defer vals.Release()
	return take(vals, idx)
}

// convertNested converts src to the nested column type t.
func convertNested(src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	n := t.Node()
	switch n.Kind {
	case store.KindList, store.KindArray:
		if src.DataType().ID() == arrow.MAP {
			break
		}
		if l, ok := src.(array.ListLike); ok {
			return convertList(l, n, t, base)
		}
	case store.KindMap:
		if m, ok := src.(*array.Map); ok {
			return convertMap(m, n, t, base)
		}
	case store.KindStruct:
		if s, ok := src.(*array.Struct); ok {
			return convertStruct(s, n, t, base)
		}
	case store.KindUnion:
		if u, ok := src.(array.Union); ok {
			return convertUnion(u, n, t, base)
		}
	}
	return nil, unsupported(src.DataType(), t)
}

// gather returns the child indices of every list of l (-1 × size for a NULL T[n]) and the
// offsets of the result, checking T[n] lengths.
func gather(l array.ListLike, size int, t store.Type, base int) (idx []int, offsets []int32, err error) {
	offsets = make([]int32, 1, l.Len()+1)
	for i := 0; i < l.Len(); i++ {
		start, end := l.ValueOffsets(i)
		if l.IsNull(i) {
			start, end = 0, 0
			for range size {
				idx = append(idx, -1)
			}
		} else if size > 0 && int(end-start) != size {
			return nil, nil, rowError(base+i+1, "a list of %d values cannot be stored in a %s column", end-start, t)
		}
		for k := start; k < end; k++ {
			idx = append(idx, int(k))
		}
		if len(idx) > 1<<31-1 {
			return nil, nil, &store.Error{Code: store.CodeTooLarge, Message: "column holds more than 2^31 list elements"}
		}
		offsets = append(offsets, int32(len(idx)))
	}
	return idx, offsets, nil
}

// childRow maps a child index to the list row holding it and its position there.
func childRow(l array.ListLike) func(int) (int, string, bool) {
	return func(c int) (int, string, bool) {
		for i := 0; i < l.Len(); i++ {
			if start, end := l.ValueOffsets(i); l.IsValid(i) && int(start) <= c && c < int(end) {
				return i, "[" + strconv.Itoa(c-int(start)) + "]", true
			}
		}
		return 0, "", false
	}
}

// convertList converts any list layout to T[] or T[n].
func convertList(l array.ListLike, n *store.TypeNode, t store.Type, base int) (arrow.Array, error) {
	idx, offsets, err := gather(l, n.Size, t, base)
	if err != nil {
		return nil, err
	}
	child, err := convertArrow(l.ListValues(), n.Elem.Type(), 0)
	if err != nil {
		return nil, remap(err, base, childRow(l))
	}
	defer child.Release()
	values, err := take(child, idx)
	if err != nil {
		return nil, err
	}
	defer values.Release()
	buffers := []*memory.Buffer{validityOf(l), memory.NewBufferBytes(arrow.GetBytes(offsets))}
	if n.Kind == store.KindArray {
		buffers = buffers[:1]
	}
	data := array.NewData(t.Arrow(), l.Len(), buffers, []arrow.ArrayData{values.Data()}, l.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// convertMap converts a map array (any entry names) to MAP(K, V).
func convertMap(m *array.Map, n *store.TypeNode, t store.Type, base int) (arrow.Array, error) {
	idx, offsets, err := gather(m, 0, t, base)
	if err != nil {
		return nil, err
	}
	var parts [2]arrow.Array
	defer func() {
		for _, p := range parts {
			if p != nil {
				p.Release()
			}
		}
	}()
	for i, pair := range []struct {
		src arrow.Array
		typ *store.TypeNode
		seg string
	}{{m.Keys(), n.Key, "key"}, {m.Items(), n.Value, "value"}} {
		c, err := convertArrow(pair.src, pair.typ.Type(), 0)
		if err != nil {
			return nil, remap(err, base, childRow(m))
		}
		parts[i], err = take(c, idx)
		c.Release()
		if err != nil {
			return nil, err
		}
	}
	if err := uniqueKeys(parts[0], offsets, base); err != nil {
		return nil, err
	}
	dt := t.Arrow().(*arrow.MapType)
	entries := array.NewData(dt.Elem(), len(idx), []*memory.Buffer{nil}, []arrow.ArrayData{parts[0].Data(), parts[1].Data()}, 0, 0)
	defer entries.Release()
	data := array.NewData(dt, m.Len(), []*memory.Buffer{validityOf(m), memory.NewBufferBytes(arrow.GetBytes(offsets))}, []arrow.ArrayData{entries}, m.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// uniqueKeys refuses a map whose row (keys[offsets[i]:offsets[i+1]]) holds a key twice,
// as a JSON body's map is refused (builders_nested.go) and as DuckDB refuses it on
// INSERT; the row is base+i+1.
func uniqueKeys(keys arrow.Array, offsets []int32, base int) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(offsets); i++ {
		clear(seen)
		for k := offsets[i]; k < offsets[i+1]; k++ {
			key := keys.ValueStr(int(k))
			if seen[key] {
				return rowError(base+i+1, "map key %s appears twice", quoteValue(key))
			}
			seen[key] = true
		}
	}
	return nil
}

// memberIndex resolves Arrow member names to a STRUCT's or UNION's members, exact first,
// then case-insensitively; an unknown name is an error naming it.
func memberIndex(fields []arrow.Field, n *store.TypeNode, t store.Type) ([]int, error) {
	out := make([]int, len(fields))
	used := make([]bool, len(n.Fields))
	for j, f := range fields {
		out[j] = -1
		for pass := 0; pass < 2 && out[j] < 0; pass++ {
			for i, m := range n.Fields {
				if m.Name == f.Name || (pass == 1 && store.SameName(m.Name, f.Name)) {
					out[j] = i
					break
				}
			}
		}
		if out[j] < 0 {
			return nil, inside(valueError(fmt.Sprintf("Arrow member %s is not a member of %s", quoteValue(f.Name), cut(string(t)))), f.Name)
		}
		if used[out[j]] {
			return nil, inside(valueError(fmt.Sprintf("Arrow member %s names member %s a second time", quoteValue(f.Name), quoteValue(n.Fields[out[j]].Name))), f.Name)
		}
		used[out[j]] = true
	}
	return out, nil
}

// convertStruct converts a struct array to STRUCT; members the Arrow struct lacks are
// NULL.
func convertStruct(s *array.Struct, n *store.TypeNode, t store.Type, base int) (arrow.Array, error) {
	st := s.DataType().(*arrow.StructType)
	at, err := memberIndex(st.Fields(), n, t)
	if err != nil {
		return nil, err
	}
	children := make([]arrow.Array, len(n.Fields))
	defer releaseSome(children)
	for j := range st.Fields() {
		m := n.Fields[at[j]]
		c, err := convertArrow(s.Field(j), m.Type.Type(), base)
		if err != nil {
			return nil, inside(err, m.Name)
		}
		children[at[j]] = c
	}
	data := make([]arrow.ArrayData, len(children))
	for i, m := range n.Fields {
		if children[i] == nil {
			children[i] = array.MakeArrayOfNull(goAllocator, m.Type.Arrow(), s.Len())
		}
		data[i] = children[i].Data()
	}
	out := array.NewData(t.Arrow(), s.Len(), []*memory.Buffer{validityOf(s)}, data, s.NullN(), 0)
	defer out.Release()
	return array.MakeFromData(out), nil
}

// convertUnion converts a sparse or dense union to UNION (sparse, type codes 0…n-1).
func convertUnion(u array.Union, n *store.TypeNode, t store.Type, base int) (arrow.Array, error) {
	ut := u.DataType().(arrow.UnionType)
	at, err := memberIndex(ut.Fields(), n, t)
	if err != nil {
		return nil, err
	}
	rows := u.Len()
	codes := make([]int8, rows)
	for i := range codes {
		codes[i] = int8(at[u.ChildID(i)])
	}
	dense, _ := u.(*array.DenseUnion)
	children := make([]arrow.Array, len(n.Fields))
	defer releaseSome(children)
	for j := range ut.Fields() {
		m := n.Fields[at[j]]
		if dense == nil {
			// A sparse member is aligned with the rows already.
			c, err := convertArrow(u.Field(j), m.Type.Type(), base)
			if err != nil {
				return nil, inside(err, m.Name)
			}
			children[at[j]] = c
			continue
		}
		idx := make([]int, rows)
		for i := range idx {
			idx[i] = -1
			if u.ChildID(i) == j {
				idx[i] = int(dense.ValueOffset(i))
			}
		}
		c, err := convertArrow(u.Field(j), m.Type.Type(), 0)
		if err != nil {
			return nil, inside(remap(err, base, func(c int) (int, string, bool) {
				for i, k := range idx {
					if k == c {
						return i, "", true
					}
				}
				return 0, "", false
			}), m.Name)
		}
		children[at[j]], err = take(c, idx)
		c.Release()
		if err != nil {
			return nil, err
		}
	}
	data := make([]arrow.ArrayData, len(children))
	for i, m := range n.Fields {
		if children[i] == nil {
			children[i] = array.MakeArrayOfNull(goAllocator, m.Type.Arrow(), rows)
		}
		data[i] = children[i].Data()
	}
	out := array.NewData(t.Arrow(), rows, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.GetBytes(codes))}, data, 0, 0)
	defer out.Release()
	return array.MakeFromData(out), nil
}
