package snapshot

import (
	"fmt"
	"testing"

	"github.com/ducktail/ducktail/store"
)

// TestScanChunkRows pins how many row groups a snapshot reads at once: about 32 MiB of
// rows, one row group for the widest tables and eight for the narrowest.
func TestScanChunkRows(t *testing.T) {
	wide := make([]store.ColumnSpec, 100)
	for i := range wide {
		wide[i] = store.ColumnSpec{Name: fmt.Sprint("c", i), Type: "DOUBLE"}
	}
	for _, tc := range []struct {
		name   string
		specs  []store.ColumnSpec
		groups int64
	}{
		{"flights", []store.ColumnSpec{{Name: "date", Type: "TIMESTAMP"}, {Name: "delay", Type: "BIGINT"},
			{Name: "distance", Type: "BIGINT"}, {Name: "origin", Type: "VARCHAR"}, {Name: "destination", Type: "VARCHAR"}}, 4},
		{"100 DOUBLE columns", wide, 1},
		{"one BOOLEAN", []store.ColumnSpec{{Name: "b", Type: "BOOLEAN"}}, 8},
	} {
		s, err := store.NewSchema(tc.specs)
		if err != nil {
			t.Fatal(err)
		}
		if got := scanChunkRows(s); got != tc.groups*store.DefaultScanChunkRows {
			t.Errorf("%s: %d rows, want %d row groups", tc.name, got, tc.groups)
		}
	}
}
