package store

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// This file parses DuckDB type spellings into a TypeNode tree and renders the tree back in
// one canonical spelling (docs/design.md, "Column types"). The rendering, never the caller's
// text, is what reaches DDL, so a type string cannot inject SQL: identifiers are quoted as
// DuckDB quotes them and ENUM values are string literals with quotes doubled.

// Kind is the shape of a TypeNode.
type Kind uint8

// The kinds of column type.
const (
	KindScalar  Kind = iota // a named type without parameters: BIGINT, UUID, INTERVAL, …
	KindDecimal             // DECIMAL(p,s)
	KindEnum                // ENUM('a', 'b')
	KindList                // T[]
	KindArray               // T[n]
	KindStruct              // STRUCT(name T, …)
	KindMap                 // MAP(K, V)
	KindUnion               // UNION(name T, …)
)

// TypeNode is a parsed column type. Scalar is set for KindScalar; Precision and Scale for
// KindDecimal; Values for KindEnum; Elem for KindList and KindArray (Size is n); Key and
// Value for KindMap; Fields for KindStruct and KindUnion.
type TypeNode struct {
	Kind             Kind
	Scalar           Type
	Precision, Scale int32
	Values           []string
	Elem             *TypeNode
	Size             int
	Key, Value       *TypeNode
	Fields           []TypeField
}

// TypeField is one member of a STRUCT or UNION.
type TypeField struct {
	Name string
	Type *TypeNode
}

// Limits of a parsed type: nesting depth (below arrow-go's IPC nesting limit of 64), the
// length of the spelling, members of a UNION (DuckDB's limit) and ARRAY size.
const (
	maxTypeDepth   = 32
	maxTypeLength  = 1 << 16
	maxUnionFields = 255
	maxArraySize   = 1 << 20
)

//go:embed duckdb_keywords.txt
var keywordList string

// keywords are DuckDB's keywords (duckdb_keywords(), every category), which DuckDB quotes
// when it prints an identifier.
var keywords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(keywordList) {
		m[w] = true
	}
	return m
}()

// ParseType parses a DuckDB type spelling and returns it in canonical form: names are
// case-insensitive and DuckDB's aliases are accepted ("INT8", "TEXT", "TIMESTAMP WITH TIME
// ZONE", "ROW(…)" for STRUCT); DECIMAL(p,s) / NUMERIC(p,s) have 1 ≤ p ≤ 38 and 0 ≤ s ≤ p;
// STRUCT and UNION member names are identifiers (quoted with "…" as in SQL) unique
// case-insensitively; ENUM values are distinct SQL string literals; T[n] has 1 ≤ n ≤ 2^20;
// nesting is at most 32 deep; a NULL of the type may take at most 2^20 Arrow slots (the
// product of nested ARRAY sizes, summed over members). The error is a CodeInvalid *Error saying what is wrong.
func ParseType(s string) (Type, error) {
	n, err := parseTypeNode(s)
	if err != nil {
		return "", err
	}
	return n.Type(), nil
}

func parseTypeNode(s string) (*TypeNode, error) {
	if len(s) > maxTypeLength {
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("column type longer than %d bytes", maxTypeLength)}
	}
	p := &typeParser{src: s}
	n, err := p.typ(0)
	if err == nil {
		p.space()
		if p.pos < len(p.src) {
			err = p.errorf("unexpected %q", p.rest())
		} else if n.nullSlots() > maxArraySize {
			err = p.errorf("one value takes more than %d slots (the product of its ARRAY sizes)", maxArraySize)
		}
	}
	if err != nil {
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("unsupported column type %s: %s; use DuckDB's spelling: BOOLEAN, TINYINT … HUGEINT, UTINYINT … UHUGEINT, FLOAT, DOUBLE, DECIMAL(p,s), VARCHAR, BLOB, UUID, JSON, DATE, TIME, TIMESTAMP, TIMESTAMP_S, TIMESTAMP_MS, TIMESTAMP_NS, TIMESTAMPTZ, INTERVAL, ENUM('a', …), T[], T[n], STRUCT(name T, …), MAP(K, V), UNION(name T, …)", quoteForMessage(s), err)}
	}
	return n, nil
}

var nodeCache sync.Map // Type → *TypeNode

// Node returns the parsed tree of t. It panics on a Type ParseType did not return.
func (t Type) Node() *TypeNode {
	if n, ok := nodeCache.Load(t); ok {
		return n.(*TypeNode)
	}
	n, err := parseTypeNode(string(t))
	if err != nil {
		panic("store: unknown column type " + string(t))
	}
	nodeCache.Store(t, n)
	return n
}

type typeParser struct {
	src string
	pos int
}

func (p *typeParser) errorf(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

func (p *typeParser) rest() string {
	r := p.src[p.pos:]
	if len(r) > 20 {
		r = r[:20] + "…"
	}
	return r
}

func (p *typeParser) space() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

// peek reports whether the next non-space byte is c.
func (p *typeParser) peek(c byte) bool {
	p.space()
	return p.pos < len(p.src) && p.src[p.pos] == c
}

func (p *typeParser) expect(c byte) error {
	if !p.peek(c) {
		if p.pos >= len(p.src) {
			return p.errorf("expected %q at the end", c)
		}
		return p.errorf("expected %q at %q", c, p.rest())
	}
	p.pos++
	return nil
}

// word reads a bare word: letters, digits and underscores, and any non-ASCII letter.
func (p *typeParser) word() string {
	p.space()
	start := p.pos
	for p.pos < len(p.src) {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		if r != '_' && !unicode.IsLetter(r) && !(p.pos > start && unicode.IsDigit(r)) {
			break
		}
		p.pos += size
	}
	return p.src[start:p.pos]
}

// quoted reads a literal delimited by q ('…' or "…") with q doubled inside.
func (p *typeParser) quoted(q byte) (string, error) {
	if err := p.expect(q); err != nil {
		return "", err
	}
	var sb strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		if c != q {
			sb.WriteByte(c)
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == q {
			sb.WriteByte(q)
			p.pos++
			continue
		}
		return sb.String(), nil
	}
	return "", p.errorf("unterminated %c…%c", q, q)
}

func (p *typeParser) integer() (int, error) {
	p.space()
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	n, err := strconv.Atoi(p.src[start:p.pos])
	if err != nil || p.pos-start > 9 {
		return 0, p.errorf("expected a number at %q", p.src[start:])
	}
	return n, nil
}

// typ parses base type then any [] / [n] suffixes.
func (p *typeParser) typ(depth int) (*TypeNode, error) {
	if depth >= maxTypeDepth {
		return nil, p.errorf("nested more than %d levels deep", maxTypeDepth)
	}
	n, err := p.base(depth)
	for err == nil && p.peek('[') {
		p.pos++
		if p.peek(']') {
			p.pos++
			n = &TypeNode{Kind: KindList, Elem: n}
		} else {
			var size int
			if size, err = p.integer(); err != nil {
				return nil, err
			}
			if size < 1 || size > maxArraySize {
				return nil, p.errorf("ARRAY size %d is not between 1 and %d", size, maxArraySize)
			}
			n = &TypeNode{Kind: KindArray, Elem: n, Size: size}
			err = p.expect(']')
		}
		if depth++; depth >= maxTypeDepth {
			return nil, p.errorf("nested more than %d levels deep", maxTypeDepth)
		}
	}
	return n, err
}

func (p *typeParser) base(depth int) (*TypeNode, error) {
	w := strings.ToUpper(p.word())
	switch w {
	case "":
		if p.pos >= len(p.src) {
			return nil, p.errorf("expected a type at the end")
		}
		return nil, p.errorf("expected a type at %q", p.rest())
	case "STRUCT", "ROW", "UNION":
		kind := KindStruct
		if w == "UNION" {
			kind = KindUnion
		}
		fields, err := p.fields(depth)
		if err != nil {
			return nil, err
		}
		if kind == KindUnion && len(fields) > maxUnionFields {
			return nil, p.errorf("a UNION has at most %d members", maxUnionFields)
		}
		return &TypeNode{Kind: kind, Fields: fields}, nil
	case "MAP":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		k, err := p.typ(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		v, err := p.typ(depth + 1)
		if err != nil {
			return nil, err
		}
		return &TypeNode{Kind: KindMap, Key: k, Value: v}, p.expect(')')
	case "ENUM":
		return p.enum()
	case "DECIMAL", "NUMERIC":
		return p.decimal()
	}
	// Multi-word spellings: TIMESTAMP WITH TIME ZONE, DOUBLE PRECISION.
	for _, more := range []string{" WITH TIME ZONE", " PRECISION"} {
		save := p.pos
		name := w
		for _, part := range strings.Fields(more) {
			if strings.ToUpper(p.word()) != part {
				name = ""
				break
			}
			name += " " + part
		}
		if t, ok := typeAliases[name]; ok && name != "" {
			return &TypeNode{Kind: KindScalar, Scalar: t}, nil
		}
		p.pos = save
	}
	if t, ok := typeAliases[w]; ok {
		return &TypeNode{Kind: KindScalar, Scalar: t}, nil
	}
	return nil, p.errorf("unknown type name %s", w)
}

// fields parses "(name T, …)" of a STRUCT or UNION.
func (p *typeParser) fields(depth int) ([]TypeField, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	var fields []TypeField
	seen := map[string]bool{}
	for {
		var name string
		var err error
		if p.peek('"') {
			name, err = p.quoted('"')
		} else if name = p.word(); name == "" {
			err = p.errorf("expected a member name at %q", p.rest())
		}
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, p.errorf("a member name is empty")
		}
		if seen[FoldName(name)] {
			return nil, p.errorf("duplicate member name %s", quoteForMessage(name))
		}
		seen[FoldName(name)] = true
		t, err := p.typ(depth + 1)
		if err != nil {
			return nil, err
		}
		fields = append(fields, TypeField{Name: name, Type: t})
		if p.peek(',') {
			p.pos++
			continue
		}
		return fields, p.expect(')')
	}
}

func (p *typeParser) enum() (*TypeNode, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	n := &TypeNode{Kind: KindEnum}
	seen := map[string]bool{}
	for {
		v, err := p.quoted('\'')
		if err != nil {
			return nil, err
		}
		if seen[v] {
			return nil, p.errorf("duplicate ENUM value %s", quoteForMessage(v))
		}
		if !utf8.ValidString(v) {
			return nil, p.errorf("ENUM value is not UTF-8")
		}
		seen[v] = true
		n.Values = append(n.Values, v)
		if p.peek(',') {
			p.pos++
			continue
		}
		return n, p.expect(')')
	}
}

// decimal parses the "(p,s)", "(p)" (s = 0) or nothing (18,3, DuckDB's default) after
// DECIMAL.
func (p *typeParser) decimal() (*TypeNode, error) {
	n := &TypeNode{Kind: KindDecimal, Precision: 18, Scale: 3}
	if !p.peek('(') {
		return n, nil
	}
	p.pos++
	prec, err := p.integer()
	if err != nil {
		return nil, err
	}
	scale := 0
	if p.peek(',') {
		p.pos++
		if scale, err = p.integer(); err != nil {
			return nil, err
		}
	}
	if prec < 1 || prec > 38 || scale > prec {
		return nil, p.errorf("DECIMAL(%d,%d) needs 1 ≤ precision ≤ 38 and 0 ≤ scale ≤ precision", prec, scale)
	}
	n.Precision, n.Scale = int32(prec), int32(scale)
	return n, p.expect(')')
}

// nullSlots is the number of Arrow slots a NULL of n takes: its own, and every slot of
// its fixed-size lists and of the members of its structs and unions.
func (n *TypeNode) nullSlots() int64 {
	w := int64(1)
	switch n.Kind {
	case KindArray:
		w += int64(n.Size) * n.Elem.nullSlots()
	case KindStruct, KindUnion:
		for _, f := range n.Fields {
			w += f.Type.nullSlots()
		}
	}
	return min(w, 1<<40)
}

// Type renders n in the canonical spelling: DuckDB's, except TIMESTAMPTZ for TIMESTAMP
// WITH TIME ZONE.
func (n *TypeNode) Type() Type {
	var sb strings.Builder
	n.render(&sb)
	return Type(sb.String())
}

func (n *TypeNode) render(sb *strings.Builder) {
	switch n.Kind {
	case KindScalar:
		sb.WriteString(string(n.Scalar))
	case KindDecimal:
		fmt.Fprintf(sb, "DECIMAL(%d,%d)", n.Precision, n.Scale)
	case KindEnum:
		sb.WriteString("ENUM(")
		for i, v := range n.Values {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(quoteString(v))
		}
		sb.WriteByte(')')
	case KindList:
		n.Elem.render(sb)
		sb.WriteString("[]")
	case KindArray:
		n.Elem.render(sb)
		fmt.Fprintf(sb, "[%d]", n.Size)
	case KindMap:
		sb.WriteString("MAP(")
		n.Key.render(sb)
		sb.WriteString(", ")
		n.Value.render(sb)
		sb.WriteByte(')')
	case KindStruct, KindUnion:
		sb.WriteString(map[Kind]string{KindStruct: "STRUCT(", KindUnion: "UNION("}[n.Kind])
		for i, f := range n.Fields {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(typeIdent(f.Name))
			sb.WriteByte(' ')
			f.Type.render(sb)
		}
		sb.WriteByte(')')
	}
}

// typeIdent renders a member name as DuckDB prints it: bare when it is letters, digits
// and underscores (not first a digit) and not a keyword, else in double quotes.
func typeIdent(name string) string {
	for i, c := range []byte(name) {
		if c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (i > 0 && '0' <= c && c <= '9') {
			continue
		}
		return QuoteIdent(name)
	}
	if keywords[strings.ToLower(name)] {
		return QuoteIdent(name)
	}
	return name
}
