package ingest

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

// This file bounds what a nested Arrow column expands to before it is converted: list
// views may overlap, a dictionary or a run may repeat one nested value many times, and a
// NULL T[n] takes n slots, so a small body can describe a huge column. slotCosts counts,
// for every value, the Arrow slots its conversion produces (every level of nesting
// counted), in time linear in the body.

// addSat adds without overflowing.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// slotCosts returns the slots each value of src takes once converted to n (at least 1).
func slotCosts(src arrow.Array, n *store.TypeNode) []int64 {
	out := make([]int64, src.Len())
	for i := range out {
		out[i] = 1
	}
	if ext, ok := src.(array.ExtensionArray); ok {
		src = ext.Storage()
	}
	switch a := src.(type) {
	case *array.Dictionary:
		dc := slotCosts(a.Dictionary(), n)
		for i := range out {
			if a.IsValid(i) {
				out[i] = dc[a.GetValueIndex(i)]
			}
		}
	case *array.RunEndEncoded:
		vc := slotCosts(a.Values(), n)
		for i := range out {
			out[i] = vc[a.GetPhysicalIndex(i)]
		}
	case *array.Map:
		if n.Kind != store.KindMap {
			return out
		}
		kc, ic := slotCosts(a.Keys(), n.Key), slotCosts(a.Items(), n.Value)
		sums := prefixSums(kc, ic)
		for i := range out {
			start, end := a.ValueOffsets(i)
			out[i] = addSat(1, sums[end]-sums[start])
		}
	case array.ListLike:
		if n.Kind != store.KindList && n.Kind != store.KindArray {
			return out
		}
		sums := prefixSums(slotCosts(a.ListValues(), n.Elem))
		for i := range out {
			start, end := a.ValueOffsets(i)
			if a.IsNull(i) {
				out[i] = addSat(1, int64(n.Size))
				continue
			}
			out[i] = addSat(1, sums[end]-sums[start])
		}
	case *array.Struct:
		if n.Kind != store.KindStruct {
			return out
		}
		for j, f := range a.DataType().(*arrow.StructType).Fields() {
			if m := memberNode(n, f.Name); m != nil {
				addCosts(out, slotCosts(a.Field(j), m))
			}
		}
		for i := range out {
			out[i] = addSat(out[i], int64(len(n.Fields)))
		}
	case array.Union:
		if n.Kind != store.KindUnion {
			return out
		}
		fields := a.DataType().(arrow.UnionType).Fields()
		costs := make([][]int64, len(fields))
		for j, f := range fields {
			if m := memberNode(n, f.Name); m != nil {
				costs[j] = slotCosts(a.Field(j), m)
			}
		}
		dense, _ := a.(*array.DenseUnion)
		for i := range out {
			j, k := a.ChildID(i), i
			if dense != nil {
				k = int(dense.ValueOffset(i))
			}
			if costs[j] != nil && k < len(costs[j]) {
				out[i] = addSat(costs[j][k], int64(len(n.Fields)))
			}
		}
	}
	return out
}

// memberNode returns the type of the STRUCT or UNION member an Arrow member name
// resolves to, or nil.
func memberNode(n *store.TypeNode, name string) *store.TypeNode {
	for _, f := range n.Fields {
		if f.Name == name {
			return f.Type
		}
	}
	for _, f := range n.Fields {
		if store.SameName(f.Name, name) {
			return f.Type
		}
	}
	return nil
}

// addCosts adds b to a slot by slot.
func addCosts(a, b []int64) {
	for i := range a {
		a[i] = addSat(a[i], b[i])
	}
}

// prefixSums returns s with s[k] the sum of the costs of elements 0…k-1, over every
// given cost slice (of equal length).
func prefixSums(costs ...[]int64) []int64 {
	s := make([]int64, len(costs[0])+1)
	for k := range costs[0] {
		s[k+1] = s[k]
		for _, c := range costs {
			s[k+1] = addSat(s[k+1], c[k])
		}
	}
	return s
}

// checkExpansion refuses, with CodeTooLarge, nested columns whose converted slots pass
// limit in total.
func checkExpansion(batches []arrow.RecordBatch, colOf []int, s *store.Schema, limit int64) error {
	var total int64
	for _, b := range batches {
		for j, col := range b.Columns() {
			c := s.Columns[colOf[j]]
			if !c.Type.Nested() {
				continue
			}
			for _, v := range slotCosts(col, c.Type.Node()) {
				total = addSat(total, v)
			}
			if total > limit {
				return &store.Error{Code: store.CodeTooLarge, Column: c.Name,
					Message: fmt.Sprintf("the nested values of the Arrow body expand to more than %d slots", limit)}
			}
		}
	}
	return nil
}
