package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
)

// TestTypedParamsStoreWhatUntypedOnesStore binds a value of each column type of
// typedBinds, as appenderValue reads it from an Arrow record, to a prepared INSERT twice:
// typed (typedParam) into one table and untyped into another. The typed bind must be
// accepted (a refused one would send the rows to the appender instead) and both tables
// must hold the same value.
func TestTypedParamsStoreWhatUntypedOnesStore(t *testing.T) {
	values := map[Type]string{
		TypeBoolean: `true`, TypeTinyint: `-128`, TypeSmallint: `32767`, TypeInteger: `-2147483648`,
		TypeBigint: `9223372036854775807`, TypeUTinyint: `255`, TypeUSmallint: `65535`,
		TypeUInteger: `4294967295`, TypeUBigint: `18446744073709551615`, TypeFloat: `1.5`,
		TypeDouble: `-2.25e300`, TypeVarchar: `"héllo\u0000wörld"`, TypeDate: `"1969-12-31"`,
		TypeTimestamp: `"1900-01-02T03:04:05.123456"`, TypeTimestampS: `"2262-01-01T00:00:01"`,
		TypeTimestampMS: `"1969-12-31T23:59:59.999"`, TypeTimestampNS: `"2024-02-29T23:59:59.999999999"`,
		TypeTimestampTZ: `"2024-06-01T12:00:00.5Z"`,
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for typ := range typedBinds {
		t.Run(string(typ), func(t *testing.T) {
			v, ok := values[typ]
			if !ok {
				t.Fatalf("no test value for %s", typ)
			}
			schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: typ.Arrow(), Nullable: true}}, nil)
			rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[{"v": `+v+`}]`))
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			value, ok := appenderValue(rec.Column(0), 0)
			if !ok || value == nil {
				t.Fatalf("appenderValue(%s) = %v, %v", v, value, ok)
			}
			name := strings.ToLower(string(typ))
			for table, param := range map[string]driver.Value{"typed_" + name: typedParam(typ, value), "untyped_" + name: value} {
				if _, err := conn.ExecContext(ctx, "CREATE TABLE "+table+" (v "+string(typ)+")"); err != nil {
					t.Fatal(err)
				}
				err := conn.Raw(func(dc any) error {
					s, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, "INSERT INTO "+table+" VALUES (?)")
					if err != nil {
						return err
					}
					stmt := s.(*duckdb.Stmt)
					defer stmt.Close()
					if err := stmt.Bind([]driver.NamedValue{{Ordinal: 1, Value: param}}); err != nil {
						return err
					}
					_, err = stmt.ExecBound(ctx)
					return err
				})
				if err != nil {
					t.Fatalf("insert %s into %s: %v", v, table, err)
				}
			}
			var differ int
			if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM typed_"+name+" t FULL JOIN untyped_"+name+
				" u ON t.v IS NOT DISTINCT FROM u.v WHERE t.v IS NULL OR u.v IS NULL").Scan(&differ); err != nil {
				t.Fatal(err)
			}
			if differ != 0 {
				t.Errorf("the typed and the untyped bind of %s stored different values", v)
			}
		})
	}
}
