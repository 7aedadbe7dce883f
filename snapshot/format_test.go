package snapshot_test

import (
	"errors"
	"testing"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

func TestNegotiate(t *testing.T) {
	cases := []struct {
		accept string
		want   snapshot.Format
	}{
		{"", snapshot.FormatJSON},
		{"   ", snapshot.FormatJSON},
		{"*/*", snapshot.FormatJSON},
		{"application/*", snapshot.FormatJSON},
		{"application/json", snapshot.FormatJSON},
		{"APPLICATION/JSON; charset=utf-8", snapshot.FormatJSON},
		{"application/vnd.apache.arrow.stream", snapshot.FormatArrow},
		{"application/x-ndjson", snapshot.FormatNDJSON},
		{"text/csv", snapshot.FormatCSV},
		{"text/*", snapshot.FormatCSV},
		{"application/vnd.apache.parquet", snapshot.FormatParquet},
		{"text/csv;q=0.5, application/x-ndjson;q=0.9", snapshot.FormatNDJSON},
		{"text/csv, application/json;q=0.9", snapshot.FormatCSV},
		// The most specific range decides: JSON is excluded although */* accepts it.
		{"application/json;q=0, */*;q=0.1", snapshot.FormatArrow},
		{"application/*;q=0.2, application/vnd.apache.parquet", snapshot.FormatParquet},
		// A malformed range is skipped, the rest still counts.
		{"garbage, text/csv", snapshot.FormatCSV},
		{"text/html, */*;q=0.8", snapshot.FormatJSON},
	}
	for _, c := range cases {
		f, ct, err := snapshot.Negotiate(c.accept)
		if err != nil || f != c.want || ct != c.want.ContentType() {
			t.Errorf("Negotiate(%q) = %q, %q, %v; want %q, %q", c.accept, f, ct, err, c.want, c.want.ContentType())
		}
	}
	for _, accept := range []string{"image/png", "text/html", "application/json;q=0", "text/csv;q=abc", "*/json"} {
		f, _, err := snapshot.Negotiate(accept)
		if !errors.Is(err, snapshot.ErrNotAcceptable) || store.ErrorCode(err) != store.CodeNotAcceptable {
			t.Errorf("Negotiate(%q) = %q, %v; want a CodeNotAcceptable error wrapping ErrNotAcceptable", accept, f, err)
		}
	}
}

func TestFormatContentType(t *testing.T) {
	want := map[snapshot.Format]string{
		snapshot.FormatArrow:   "application/vnd.apache.arrow.stream",
		snapshot.FormatJSON:    "application/json",
		snapshot.FormatNDJSON:  "application/x-ndjson",
		snapshot.FormatCSV:     "text/csv; charset=utf-8; header=present",
		snapshot.FormatParquet: "application/vnd.apache.parquet",
		"xml":                  "",
	}
	for f, ct := range want {
		if got := f.ContentType(); got != ct {
			t.Errorf("%q.ContentType() = %q, want %q", f, got, ct)
		}
	}
}
