package main

import (
	"strings"
	"testing"
)

// TestCLIIngestsAnArrayInsideADocument ingests a GeoJSON FeatureCollection (real USGS
// earthquakes): without --json-path the error says which path would help; with
// --json-path features every feature is a row; a path that names no array says what
// is there.
func TestCLIIngestsAnArrayInsideADocument(t *testing.T) {
	st := startStack(t)
	const quakes = "../../testdata/earthquakes-50.json"
	_, err := st.tryCLI("ingest", "quakes", quakes, "--create")
	if err == nil || !strings.Contains(err.Error(), "the document is an object, not an array of objects") ||
		!strings.Contains(err.Error(), "use --json-path features (its arrays: features, bbox)") {
		t.Fatalf("a FeatureCollection without --json-path: %v", err)
	}
	// Created from the whole document (columns are inferred from the first commit, and
	// properties and geometry are STRUCTs whose member types need every feature), then
	// appended to again in commits of 20 rows.
	out := st.cli(t, "ingest", "quakes", quakes, "--create", "--json-path", "features")
	if !strings.Contains(out, "ingested 50 rows in 1 commit") {
		t.Fatalf("--json-path features: %s", out)
	}
	out = st.cli(t, "ingest", "quakes", quakes, "--json-path", "features", "--chunk-rows", "20")
	if !strings.Contains(out, "ingested 50 rows in 3 commits") {
		t.Fatalf("--json-path features --chunk-rows 20: %s", out)
	}
	out = st.cli(t, "query", "SELECT count(*) AS n, count(DISTINCT id) AS ids, min(type) AS type, min(id) AS first, max(CASE WHEN id = 'ci37868143' THEN properties.place END) AS place FROM quakes", "--format", "json")
	for _, want := range []string{`"n":100`, `"ids":50`, `"type":"Feature"`, `"first":"ak18378155"`, `"place":"4km W of Castaic, CA"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("the features as rows lack %s: %s", want, out)
		}
	}
	for _, c := range []struct{ path, want string }{
		{"metadata", "--json-path metadata is an object, not an array of objects"},
		{"nope", `--json-path nope: the document: no key "nope" (its keys: type, metadata, features, bbox)`},
		{"type.name", `--json-path type.name: --json-path type is a string, not an object holding "name"`},
	} {
		if _, err := st.tryCLI("ingest", "quakes", quakes, "--json-path", c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--json-path %s: %v, want %q", c.path, err, c.want)
		}
	}
	if _, err := st.tryCLI("ingest", "quakes", "../../testdata/seattle-weather.csv", "--json-path", "features"); err == nil || !strings.Contains(err.Error(), "--json-path is for --format json") {
		t.Errorf("--json-path on a CSV file: %v", err)
	}
}
