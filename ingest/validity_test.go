package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// TestValidityKeepsNoBitmapUntilTheFirstNull checks the validity bitmap of every
// sequence of up to 12 slots against the slots themselves: the bitmap made at the first
// null must mark every slot before it valid, on both sides of a byte boundary.
func TestValidityKeepsNoBitmapUntilTheFirstNull(t *testing.T) {
	for n := range 13 {
		for mask := range 1 << n {
			var v validity
			nulls := 0
			for i := range n {
				valid := mask&(1<<i) == 0
				if !valid {
					nulls++
				}
				v.add(valid)
			}
			if v.n != n || v.nulls != nulls {
				t.Fatalf("n=%d mask=%b: %d slots, %d nulls; want %d, %d", n, mask, v.n, v.nulls, n, nulls)
			}
			buf := v.buffer()
			if nulls == 0 {
				if buf != nil {
					t.Fatalf("n=%d: a bitmap without nulls", n)
				}
				continue
			}
			for i := range n {
				if got, want := bitutil.BitIsSet(buf.Bytes(), i), mask&(1<<i) == 0; got != want {
					t.Fatalf("n=%d mask=%b: slot %d valid %v, want %v", n, mask, i, got, want)
				}
			}
		}
	}
}

// TestJSONNullAfterValidRows decodes rows whose first null in each column comes after
// valid rows, past a byte of the bitmap, and reads every slot back.
func TestJSONNullAfterValidRows(t *testing.T) {
	s := schemaOf(t, "i BIGINT", "s VARCHAR", "b BOOLEAN")
	var rows []string
	for i := range 20 {
		if i == 9 || i == 17 {
			rows = append(rows, `{"i":null,"s":null,"b":null}`)
			continue
		}
		rows = append(rows, fmt.Sprintf(`{"i":%d,"s":"v%d","b":true}`, i, i))
	}
	rec, err := jsonDecoder{}.Decode([]byte("["+strings.Join(rows, ",")+"]"), s)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for c := range int(rec.NumCols()) {
		col := rec.Column(c)
		if col.NullN() != 2 {
			t.Errorf("column %d: %d nulls, want 2", c, col.NullN())
		}
		for i := range 20 {
			if got, want := col.IsNull(i), i == 9 || i == 17; got != want {
				t.Errorf("column %d row %d: null %v, want %v", c, i, got, want)
			}
		}
	}
	if got := rec.Column(1).ValueStr(18); got != "v18" {
		t.Errorf("row 18 of s: %q, want v18", got)
	}
}
