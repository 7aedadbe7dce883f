package client

import "testing"

// TestTableCursor reads a Ducktail-Cursors header ("t1=r1…, t2=r1…"), table names
// compared case-insensitively.
func TestTableCursor(t *testing.T) {
	h := "a=r1.x, Weather=r1.y,c=r1.z"
	for table, want := range map[string]string{"a": "r1.x", "weather": "r1.y", "C": "r1.z", "d": ""} {
		if got := tableCursor(h, table); got != want {
			t.Errorf("%s: %q, want %q", table, got, want)
		}
	}
}
