package store

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ReservedPrefix starts every name ducktail keeps for itself (the system seq column, the
// ingest views); user table and column names may not start with it, in any letter case.
// docs/design.md, "Storage model".
const ReservedPrefix = "__ducktail"

// MaxNameLen is the longest table or column name accepted, in bytes.
const MaxNameLen = 128

// reservedTableNames are names that would shadow the schemas and functions users reach
// through SQL, compared in lower case.
var reservedTableNames = map[string]bool{
	"ducktail": true, "ducktail_catalog": true, "ducktail_data": true, "ducktail_migrations": true,
	"main": true, "information_schema": true, "pg_catalog": true, "temp": true, "system": true,
}

// ValidateTableName reports whether name may name a table: an ASCII identifier
// ([A-Za-z_][A-Za-z0-9_]*, at most MaxNameLen bytes) that does not start with
// ReservedPrefix and is not a reserved schema name. Table names appear in URLs and in
// user SQL, so they are kept simple. The error is a CodeInvalid *Error naming the field.
func ValidateTableName(name string) error {
	bad := func(why string) error {
		return &Error{Code: CodeInvalid, Message: "invalid table name " + quoteForMessage(name) + ": " + why, Field: "name"}
	}
	if name == "" {
		return bad("empty")
	}
	if len(name) > MaxNameLen {
		return bad("longer than 128 bytes")
	}
	for i, r := range name {
		ok := r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || (i > 0 && '0' <= r && r <= '9')
		if !ok {
			return bad("use letters, digits and underscores, not starting with a digit")
		}
	}
	if strings.HasPrefix(FoldName(name), ReservedPrefix) {
		return bad("the prefix " + ReservedPrefix + " is reserved")
	}
	if reservedTableNames[FoldName(name)] {
		return bad("reserved name")
	}
	return nil
}

// ValidateColumnName reports whether name may name a column: valid UTF-8, 1 to MaxNameLen
// bytes, no control characters, no leading or trailing space, not starting with
// ReservedPrefix. Column names from real files ("Cost Total $") are allowed; they are
// quoted everywhere. The error is a CodeInvalid *Error naming the column.
func ValidateColumnName(name string) error {
	bad := func(why string) error {
		return &Error{Code: CodeInvalid, Message: "invalid column name " + quoteForMessage(name) + ": " + why, Column: name}
	}
	if name == "" {
		return bad("empty")
	}
	if len(name) > MaxNameLen {
		return bad("longer than 128 bytes")
	}
	if !utf8.ValidString(name) {
		return bad("not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return bad("contains a control character")
		}
	}
	if strings.TrimSpace(name) != name {
		return bad("leading or trailing space")
	}
	if strings.HasPrefix(FoldName(name), ReservedPrefix) {
		return bad("the prefix " + ReservedPrefix + " is reserved")
	}
	return nil
}

// QuoteIdent quotes a DuckDB identifier: wrapped in double quotes, embedded double quotes
// doubled (DuckDB SQL grammar).
func QuoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// quoteString quotes a DuckDB string literal.
func quoteString(s string) string {
	return `'` + strings.ReplaceAll(s, `'`, `''`) + `'`
}

// quoteForMessage quotes a user-supplied name for an error message, Go-escaped so that
// messages stay on one line whatever the name holds.
func quoteForMessage(s string) string {
	if len(s) > MaxNameLen {
		s = s[:MaxNameLen] + "…"
	}
	return strconv.Quote(s)
}

// FoldName returns name with its ASCII letters lower-cased, the form in which names are
// compared: DuckDB matches identifiers ignoring ASCII case only. (strings.EqualFold and
// strings.ToLower also fold other letters, such as the Kelvin sign into "k" and "ſ" into
// "s", which DuckDB does not: a check using them could pass a name that DuckDB binds to
// something else.)
func FoldName(name string) string {
	for i := 0; i < len(name); i++ {
		if 'A' <= name[i] && name[i] <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return name
}

// SameName reports whether a and b name the same table or column (FoldName).
func SameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
