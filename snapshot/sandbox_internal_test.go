package snapshot

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/store"
)

// TestWalkRefusesUnknownFromItems feeds the walker syntax trees DuckDB's parser does not
// produce today, to pin that it fails closed on FROM items it does not know and finds
// the named ones wherever they sit.
func TestWalkRefusesUnknownFromItems(t *testing.T) {
	cases := []struct {
		tree string
		code store.Code
		msg  string
	}{
		{`{"type":"SELECT_NODE","modifiers":[],"cte_map":{"map":[]},"from_table":{"type":"COLUMN_DATA","alias":"","sample":null,"query_location":0}}`,
			store.CodeUnprocessable, "unsupported FROM item (column_data)"},
		{`{"type":"SELECT_NODE","modifiers":[],"cte_map":{"map":[]},"somewhere_new":[{"type":"TABLE_FUNCTION","function":{"function_name":"read_csv"}}]}`,
			store.CodeUnprocessable, "table function read_csv() is not allowed"},
		{`{"type":"SELECT_NODE","modifiers":[],"cte_map":{"map":[]},"somewhere_new":{"type":"BASE_TABLE","schema_name":"ducktail_catalog","table_name":"tokens","catalog_name":""}}`,
			store.CodeUnprocessable, `reading "ducktail_catalog"."tokens" is not allowed`},
	}
	for _, c := range cases {
		var tree any
		if err := json.Unmarshal([]byte(c.tree), &tree); err != nil {
			t.Fatal(err)
		}
		w := &walker{ctx: context.Background(), tables: map[string]store.TableInfo{}}
		err := w.walk(tree, nil)
		se, ok := err.(*store.Error)
		if !ok || se.Code != c.code || !strings.Contains(se.Message, c.msg) {
			t.Errorf("%s: err = %v, want code %s and a message with %q", c.tree, err, c.code, c.msg)
		}
	}
}
