package ingest

import (
	"strings"

	"github.com/ducktail/ducktail/store"
)

// This file infers the types of JSON objects and arrays for ?create=true, the way DuckDB's
// read_json does (docs/design.md, "Column types"): an array is a LIST of its elements' type;
// an object a STRUCT of its members, named as first seen and merged case-insensitively
// across rows, or, past maxInferredMembers distinct names (DuckDB's
// map_inference_threshold), a MAP(VARCHAR, T) of every member's type; values of different
// kinds in one place, or an object naming a member twice, make that place JSON. Inside nested values scalars follow the rules
// of whole fields (jsonInferVisitor); a place with only nulls is VARCHAR.

// maxInferredMembers is the most distinct member names an object place may have and still
// infer a STRUCT.
const maxInferredMembers = 200

type shapeKind uint8

const (
	shapeNone shapeKind = iota // only nulls so far
	shapeBoolean
	shapeNumber
	shapeString
	shapeObject
	shapeArray
	shapeMixed // values of two kinds: JSON
)

// jsonShape is what inference knows about one place inside nested values.
type jsonShape struct {
	kind     shapeKind
	double   bool  // numbers need DOUBLE
	temporal uint8 // temporal candidates left for strings
	elem     *jsonShape
	names    []string // member names as first seen, for objects
	members  map[string]*jsonShape
}

func kindOf(v jsonValue) shapeKind {
	switch v.kind {
	case jsonTrue, jsonFalse:
		return shapeBoolean
	case jsonNumber:
		return shapeNumber
	case jsonString:
		return shapeString
	case jsonObject:
		return shapeObject
	case jsonArray:
		return shapeArray
	}
	return shapeNone
}

// add merges one value into s.
func (s *jsonShape) add(v jsonValue) {
	k := kindOf(v)
	if k == shapeNone || s.kind == shapeMixed {
		return
	}
	if s.kind == shapeNone {
		s.kind, s.temporal = k, candTemporal
	} else if s.kind != k {
		s.setMixed()
		return
	}
	switch k {
	case shapeNumber:
		if _, res := parseInteger(v.text, int64Range); res != integerOK || strings.ContainsAny(v.text, ".eE") {
			s.double = true
			if _, _, finite := parseFloat(v.text, 64); !finite {
				s.setMixed()
			}
		}
	case shapeString:
		s.temporal &^= temporalMisses(v.text)
	case shapeArray:
		if s.elem == nil {
			s.elem = &jsonShape{}
		}
		var it jsonIter
		it.reset(v.text)
		for _, e, ok, _ := it.next(false); ok; _, e, ok, _ = it.next(false) {
			s.elem.add(e)
		}
	case shapeObject:
		if s.members == nil {
			s.members = map[string]*jsonShape{}
		}
		var it jsonIter
		it.reset(v.text)
		seen := map[string]bool{}
		for name, m, ok, _ := it.next(true); ok; name, m, ok, _ = it.next(true) {
			if seen[store.FoldName(name)] {
				// No STRUCT or MAP holds a name twice in one value.
				s.setMixed()
				return
			}
			seen[store.FoldName(name)] = true
			s.member(name).add(m)
		}
	}
}

// member returns the shape of member name, adding it.
func (s *jsonShape) member(name string) *jsonShape {
	key := store.FoldName(name)
	ms, ok := s.members[key]
	if !ok {
		ms = &jsonShape{}
		s.members[key] = ms
		s.names = append(s.names, name)
	}
	return ms
}

func (s *jsonShape) setMixed() {
	*s = jsonShape{kind: shapeMixed}
}

// merge merges shape o into s.
func (s *jsonShape) merge(o *jsonShape) {
	switch {
	case o == nil || o.kind == shapeNone || s.kind == shapeMixed:
		return
	case s.kind == shapeNone:
		*s = *o
		return
	case s.kind != o.kind:
		s.setMixed()
		return
	}
	s.double = s.double || o.double
	s.temporal &= o.temporal
	if o.elem != nil {
		if s.elem == nil {
			s.elem = &jsonShape{}
		}
		s.elem.merge(o.elem)
	}
	for _, name := range o.names {
		s.member(name).merge(o.members[store.FoldName(name)])
	}
}

// node returns the column type of s; depth counts the levels above it.
func (s *jsonShape) node(depth int) *store.TypeNode {
	scalar := func(t store.Type) *store.TypeNode { return &store.TypeNode{Kind: store.KindScalar, Scalar: t} }
	if depth >= 30 {
		return scalar(store.TypeJSON)
	}
	switch s.kind {
	case shapeBoolean:
		return scalar(store.TypeBoolean)
	case shapeNumber:
		if s.double {
			return scalar(store.TypeDouble)
		}
		return scalar(store.TypeBigint)
	case shapeString:
		return scalar(chooseTemporal(s.temporal))
	case shapeMixed:
		return scalar(store.TypeJSON)
	case shapeArray:
		elem := scalar(store.TypeVarchar)
		if s.elem != nil {
			elem = s.elem.node(depth + 1)
		}
		return &store.TypeNode{Kind: store.KindList, Elem: elem}
	case shapeObject:
		switch {
		case len(s.names) == 0:
			return scalar(store.TypeJSON)
		case len(s.names) > maxInferredMembers || slicesContain(s.names, ""):
			all := &jsonShape{}
			for _, ms := range s.members {
				all.merge(ms)
			}
			return &store.TypeNode{Kind: store.KindMap, Key: scalar(store.TypeVarchar), Value: all.node(depth + 1)}
		}
		n := &store.TypeNode{Kind: store.KindStruct}
		for _, name := range s.names {
			n.Fields = append(n.Fields, store.TypeField{Name: name, Type: s.members[store.FoldName(name)].node(depth + 1)})
		}
		return n
	}
	return scalar(store.TypeVarchar)
}

func slicesContain(names []string, want string) bool {
	for _, n := range names {
		if n == want {
			return true
		}
	}
	return false
}
