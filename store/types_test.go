package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

// typeCases are spellings and their canonical form; every canonical form is also checked
// against DuckDB (TestTypesMatchDuckDB).
var typeCases = []struct{ in, want string }{
	{"int8", "BIGINT"},
	{"int128", "HUGEINT"},
	{"uhugeint", "UHUGEINT"},
	{"uuid", "UUID"},
	{"json", "JSON"},
	{"interval", "INTERVAL"},
	{"timestamp_us", "TIMESTAMP"},
	{"timestamp_s", "TIMESTAMP_S"},
	{"Timestamp_MS", "TIMESTAMP_MS"},
	{"timestamp_ns", "TIMESTAMP_NS"},
	{"timestamp  with time   zone", "TIMESTAMPTZ"},
	{"double precision", "DOUBLE"},
	{"numeric", "DECIMAL(18,3)"},
	{"decimal( 38 , 10 )", "DECIMAL(38,10)"},
	{"decimal(5)", "DECIMAL(5,0)"},
	{"int[]", "INTEGER[]"},
	{"int[3]", "INTEGER[3]"},
	{"int [ ] [2]", "INTEGER[][2]"},
	{"struct(lat double, tags varchar[])", "STRUCT(lat DOUBLE, tags VARCHAR[])"},
	{`row("type" varchar, coordinates double[])`, `STRUCT("type" VARCHAR, coordinates DOUBLE[])`},
	{`STRUCT(Lat INT, "A b" INT, "x""y" INT, "日本" INT, "select" INT)`, `STRUCT(Lat INTEGER, "A b" INTEGER, "x""y" INTEGER, "日本" INTEGER, "select" INTEGER)`},
	{"map(varchar, integer)", "MAP(VARCHAR, INTEGER)"},
	{"map(int, struct(a int[])[])", "MAP(INTEGER, STRUCT(a INTEGER[])[])"},
	{"map(varchar, struct(x double[]))", "MAP(VARCHAR, STRUCT(x DOUBLE[]))"},
	{"union(a int, b varchar)", "UNION(a INTEGER, b VARCHAR)"},
	{"enum('a','it''s', '')", "ENUM('a', 'it''s', '')"},
	{`STRUCT("x); DROP TABLE t; --" INT)`, `STRUCT("x); DROP TABLE t; --" INTEGER)`},
	{`ENUM('x''); DROP TABLE t; --')`, `ENUM('x''); DROP TABLE t; --')`},
}

func TestParseType(t *testing.T) {
	for _, c := range typeCases {
		got, err := store.ParseType(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("ParseType(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{
		"", "GEOMETRY", "INTEGER); DROP TABLE t; --", "INTEGER[", "INTEGER[0]", "INTEGER[x]",
		"STRUCT()", "STRUCT(a)", "STRUCT(a INT, A INT)", `STRUCT("" INT)`, "STRUCT(a INT", "MAP(INT)",
		"ENUM()", "ENUM('a', 'a')", "ENUM(a)", "ENUM('a", "DECIMAL(39,0)", "DECIMAL(4,5)", "DECIMAL(0)",
		"UNION()", strings.Repeat("INT[]", 40), "TIMESTAMP WITH", "INT INT", "INT[1024][1025]", "STRUCT(a INT[1048576])",
	} {
		if got, err := store.ParseType(bad); store.ErrorCode(err) != store.CodeInvalid {
			t.Errorf("ParseType(%q) = %q, %v; want CodeInvalid", bad, got, err)
		}
	}
}

// TestTypesMatchDuckDB checks, with a real DuckDB, that every canonical spelling is one
// DuckDB reads as the same type and that Type.Arrow is the Arrow type DuckDB exports for
// it, member names and nullability included.
func TestTypesMatchDuckDB(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	enum300 := make([]string, 300)
	for i := range enum300 {
		enum300[i] = fmt.Sprintf("'v%d'", i)
	}
	types := []string{"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
		"UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR", "BLOB", "DATE", "TIME", "DECIMAL(4,1)",
		"ENUM(" + strings.Join(enum300, ", ") + ")"}
	for _, c := range typeCases {
		types = append(types, c.want)
	}
	err := db.Read(ctx, func(tx *store.ReadTx) error {
		for _, spelling := range types {
			typ, err := store.ParseType(spelling)
			if err != nil {
				t.Errorf("ParseType(%q): %v", spelling, err)
				continue
			}
			duck, err := tx.QueryString(ctx, "SELECT typeof(NULL::"+string(typ)+")")
			if err != nil {
				t.Errorf("DuckDB refuses %s: %v", typ, err)
				continue
			}
			if duck != strings.Replace(string(typ), "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE", 1) {
				t.Errorf("DuckDB spells %s as %s", typ, duck)
			}
			err = tx.QueryArrow(ctx, "SELECT NULL::"+string(typ)+" AS x", nil, func(rr array.RecordReader) error {
				got := rr.Schema().Field(0).Type
				if !arrow.TypeEqual(got, typ.Arrow()) || !sameNames(got, typ.Arrow()) {
					t.Errorf("%s: DuckDB exports %s, Type.Arrow is %s", typ, got, typ.Arrow())
				}
				return nil
			})
			if err != nil {
				t.Errorf("%s: %v", typ, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sameNames reports whether a and b name their children alike at every level.
func sameNames(a, b arrow.DataType) bool {
	na, ok := a.(arrow.NestedType)
	nb, ok2 := b.(arrow.NestedType)
	if !ok || !ok2 {
		return ok == ok2
	}
	fa, fb := na.Fields(), nb.Fields()
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i].Name != fb[i].Name || fa[i].Nullable != fb[i].Nullable || !sameNames(fa[i].Type, fb[i].Type) {
			return false
		}
	}
	return true
}

// TestKeywordsAreDuckDBs checks the embedded keyword list (the identifiers the canonical
// spelling quotes) against duckdb_keywords().
func TestKeywordsAreDuckDBs(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	err := db.Read(ctx, func(tx *store.ReadTx) error {
		words, err := tx.QueryString(ctx, "SELECT string_agg(keyword_name, ' ' ORDER BY keyword_name) FROM duckdb_keywords()")
		if err != nil {
			return err
		}
		for _, w := range strings.Fields(words) {
			if got, _ := store.ParseType("STRUCT(" + w + " INT)"); string(got) != `STRUCT("`+w+`" INTEGER)` {
				t.Errorf("keyword %s is not quoted: %s", w, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTypeFromArrow(t *testing.T) {
	for _, c := range []struct {
		dt   arrow.DataType
		want string
	}{
		{arrow.LargeListOf(arrow.PrimitiveTypes.Int16), "SMALLINT[]"},
		{arrow.ListViewOf(arrow.BinaryTypes.String), "VARCHAR[]"},
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float64), "DOUBLE[2]"},
		{arrow.StructOf(arrow.Field{Name: "type", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "n", Type: &arrow.Decimal256Type{Precision: 20, Scale: 2}}), `STRUCT("type" VARCHAR, n DECIMAL(20,2))`},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.FixedWidthTypes.Duration_ns), "MAP(VARCHAR, INTERVAL)"},
		{arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32}, {Name: "s", Type: arrow.BinaryTypes.String}}, []arrow.UnionTypeCode{5, 7}), "UNION(i INTEGER, s VARCHAR)"},
		{arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.FixedWidthTypes.Date64), "DATE"},
		{&arrow.TimestampType{Unit: arrow.Nanosecond}, "TIMESTAMP_NS"},
		{&arrow.Decimal32Type{Precision: 9, Scale: 3}, "DECIMAL(9,3)"},
	} {
		got, err := store.TypeFromArrow(c.dt)
		if err != nil || string(got) != c.want {
			t.Errorf("TypeFromArrow(%s) = %q, %v; want %s", c.dt, got, err, c.want)
		}
	}
	for _, dt := range []arrow.DataType{
		arrow.Null, &arrow.Decimal256Type{Precision: 76},
		arrow.StructOf(), arrow.StructOf(arrow.Field{Name: "a", Type: arrow.Null}),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int8}, arrow.Field{Name: "A", Type: arrow.PrimitiveTypes.Int8}),
	} {
		if got, err := store.TypeFromArrow(dt); store.ErrorCode(err) != store.CodeUnprocessable {
			t.Errorf("TypeFromArrow(%s) = %q, %v; want CodeUnprocessable", dt, got, err)
		}
	}
}

// TestSchemaArrowIsSharedWhileColumnsAreUnchanged checks that the Arrow schema of a
// table's schema version is made once and shared by every copy, across a column change
// and a reopen, and that a copy whose columns were edited gets its own.
func TestSchemaArrowIsSharedWhileColumnsAreUnchanged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ducktail.duckdb")
	db, _ := openDB(t, path)
	if _, err := db.CreateTable(ctx, "weather", weatherColumns); err != nil {
		t.Fatal(err)
	}
	shared := func(db *store.DB, want int) {
		t.Helper()
		a, _ := db.Table("weather")
		b, _ := db.Table("weather")
		if a.Schema.Arrow() != b.Schema.Arrow() {
			t.Error("two reads of the table made two Arrow schemas")
		}
		if got := a.Schema.Arrow().NumFields(); got != want {
			t.Errorf("the Arrow schema has %d fields, want %d", got, want)
		}
		edited := a.Schema
		edited.Columns = append(edited.Columns[:len(edited.Columns):len(edited.Columns)], store.Column{ID: 99, Name: "extra", Type: store.TypeBigint})
		if got := edited.Arrow(); got.NumFields() != want+1 || got.Field(want).Name != "extra" {
			t.Errorf("an edited copy's Arrow schema is %v", got)
		}
		edited.Columns = edited.Columns[:1]
		if got := edited.Arrow(); got.NumFields() != 1 {
			t.Errorf("a shortened copy's Arrow schema has %d fields", got.NumFields())
		}
	}
	shared(db, 3)
	if _, err := db.AddColumn(ctx, "weather", store.ColumnSpec{Name: "wind", Type: "DOUBLE"}); err != nil {
		t.Fatal(err)
	}
	shared(db, 4)
	db.Close()
	db, _ = openDB(t, path)
	shared(db, 4)
}
