package snapshot_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

// shapedNDJSON reads table through spec and policy as NDJSON.
func shapedNDJSON(t *testing.T, r *snapshot.Reader, table string, spec snapshot.ShapeSpec, policy store.TokenPolicy) (string, store.ShapeTag, error) {
	t.Helper()
	var buf bytes.Buffer
	var tag store.ShapeTag
	err := r.ShapedTable(context.Background(), table, spec, policy, snapshot.FormatNDJSON, &buf, func(_ store.Position, tg store.ShapeTag) { tag = tg })
	return buf.String(), tag, err
}

func queryNDJSON(t *testing.T, r *snapshot.Reader, sql string) string {
	t.Helper()
	res, err := r.Query(context.Background(), sql, nil, snapshot.FormatNDJSON, allowAll)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return string(res.Body)
}

// TestShapedSnapshotIsTheQuery: a shaped snapshot holds exactly the rows and columns of
// the same SELECT run as a query, in the same order: DuckDB evaluates both.
func TestShapedSnapshotIsTheQuery(t *testing.T) {
	db := openDB(t)
	r := newReader(t, db)
	loadWeather(t, db, "weather", 400)
	for _, c := range []struct {
		spec snapshot.ShapeSpec
		sql  string
	}{
		{snapshot.ShapeSpec{Where: "weather = 'rain' AND temp_max > 15"}, "SELECT * FROM weather WHERE weather = 'rain' AND temp_max > 15"},
		{snapshot.ShapeSpec{Where: "weather ILIKE 'SU%' OR precipitation BETWEEN 1 AND 2", Columns: []string{"WIND", "date"}},
			"SELECT wind, date FROM weather WHERE weather ILIKE 'SU%' OR precipitation BETWEEN 1 AND 2"},
		{snapshot.ShapeSpec{Columns: []string{"weather"}}, "SELECT weather FROM weather"},
		{snapshot.ShapeSpec{Where: "year(date) = 2013 AND CASE WHEN wind > 4 THEN true ELSE weather IN ('fog', 'drizzle') END AND temp_min::INTEGER IS NOT NULL"},
			"SELECT * FROM weather WHERE year(date) = 2013 AND CASE WHEN wind > 4 THEN true ELSE weather IN ('fog', 'drizzle') END AND temp_min::INTEGER IS NOT NULL"},
	} {
		got, tag, err := shapedNDJSON(t, r, "weather", c.spec, store.TokenPolicy{})
		if err != nil {
			t.Fatalf("%+v: %v", c.spec, err)
		}
		if want := queryNDJSON(t, r, c.sql); got != want || got == "" {
			t.Errorf("%+v: snapshot\n%.300s\nquery\n%.300s", c.spec, got, want)
		}
		if tag == (store.ShapeTag{}) {
			t.Errorf("%+v: the zero tag for a shape", c.spec)
		}
	}
	_, tag, err := shapedNDJSON(t, r, "weather", snapshot.ShapeSpec{}, store.TokenPolicy{})
	if err != nil || tag != (store.ShapeTag{}) {
		t.Errorf("no shape: tag %x, err %v; want the zero tag", tag, err)
	}
	// Two spellings of one shape are one shape.
	a, _ := r.Shape(context.Background(), "weather", snapshot.ShapeSpec{Where: "weather='rain'  and wind>1"}, store.TokenPolicy{})
	b, _ := r.Shape(context.Background(), "weather", snapshot.ShapeSpec{Where: "(weather = 'rain') AND (wind > 1)"}, store.TokenPolicy{})
	if a == nil || b == nil || a.Key() != b.Key() {
		t.Errorf("keys %q and %q differ", a.Key(), b.Key())
	}
}

// TestShapePredicateRefusals: the predicate check refuses everything but one pure boolean
// expression over the table's visible columns, before anything runs, with a 400 naming
// what is wrong.
func TestShapePredicateRefusals(t *testing.T) {
	db := openDB(t)
	r := newReader(t, db)
	loadWeather(t, db, "weather", 2000)
	if _, err := db.CreateTable(context.Background(), "other", weatherColumns); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ where, want string }{
		{"true) UNION SELECT * FROM other WHERE (true", "reaches outside"},
		{"true) ORDER BY (1", "reaches outside"},
		{"true) GROUP BY (wind", "reaches outside"},
		{"true); DROP TABLE weather; SELECT (1", "not one boolean expression"},
		{"wind IN (SELECT wind FROM other)", "subquery is not allowed"},
		{"EXISTS (SELECT 1)", "subquery is not allowed"},
		{"random() < 0.5", "random() is not allowed"},
		{"now() > date", "now() is not allowed"},
		{"date < current_date", `no column "current_date"`},
		{"getenv('HOME') = weather", "getenv() is not allowed"},
		{"length(read_text('/etc/passwd')) > 0", "read_text() is not allowed"},
		{"nextval('s') > 0", "nextval() is not allowed"},
		{"sum(wind) > 0", "sum() is not allowed"},
		{"row_number() OVER () > 1", "window is not allowed"},
		{"wind = $1", "parameter is not allowed"},
		{"list_filter([1], x -> x > 0) = [1]", "is not allowed"},
		{"main.lower(weather) = 'x'", "lower() is not allowed"},
		{"weather.wind > 1", "without a table or schema"},
		{"nosuch = 1", `has no column "nosuch"`},
		{"lower(wind) = 'x'", "Binder Error"},
		{"true /*", "syntax error"},
		{"  ", "empty"},
		{strings.Repeat("wind > 1 AND ", 400) + "true", "longer than"},
		{strings.Repeat("abs(", 40) + "wind" + strings.Repeat(")", 40) + " > 1", "too complex"},
	} {
		_, err := r.Shape(context.Background(), "weather", snapshot.ShapeSpec{Where: c.where}, store.TokenPolicy{})
		se := wantCode(t, c.where, err, store.CodeInvalid)
		if se.Field != "where" || !strings.Contains(se.Message, c.want) {
			t.Errorf("%.60q: field %q message %q, want %q", c.where, se.Field, se.Message, c.want)
		}
	}
	_, err := r.Shape(context.Background(), "weather", snapshot.ShapeSpec{Columns: []string{"wind", "nosuch"}}, store.TokenPolicy{})
	if se := wantCode(t, "columns", err, store.CodeInvalid); se.Field != "columns" || se.Column != "nosuch" {
		t.Errorf("unknown column: %+v", se)
	}
	// A predicate that fails on a value is refused without quoting the value.
	_, _, err = shapedNDJSON(t, r, "weather", snapshot.ShapeSpec{Where: "weather::INTEGER > 1"}, store.TokenPolicy{})
	if se := wantCode(t, "cast", err, store.CodeUnprocessable); strings.Contains(se.Error(), "rain") || strings.Contains(se.Error(), "sun") {
		t.Errorf("a failed cast quotes a value: %v", se)
	}
	// A comment runs to the end of its line only: the predicate stays inside its WHERE.
	got, _, err := shapedNDJSON(t, r, "weather", snapshot.ShapeSpec{Where: "weather = 'snow' -- ) OR (true"}, store.TokenPolicy{})
	if err != nil || got != queryNDJSON(t, r, "SELECT * FROM weather WHERE weather = 'snow'") {
		t.Errorf("comment: err %v", err)
	}
}

// TestPolicyHidesRowsAndColumns: a policy's rows and columns bound every shape asked
// through it; a column outside the policy is refused exactly as a missing one, and no
// predicate text widens the policy's rows.
func TestPolicyHidesRowsAndColumns(t *testing.T) {
	db := openDB(t)
	r := newReader(t, db)
	loadWeather(t, db, "weather", 2000)
	ctx := context.Background()
	pol, err := r.Shape(ctx, "weather", snapshot.ShapeSpec{Where: "weather = 'sun'", Columns: []string{"date", "wind"}}, store.TokenPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	policy := store.TokenPolicy{Where: pol.Where, Columns: []string{"date", "wind"}}
	want := queryNDJSON(t, r, "SELECT date, wind FROM weather WHERE weather = 'sun'")
	for _, where := range []string{"", "true) OR (true", "true)) OR ((true", "wind >= 0 OR true"} {
		got, _, err := shapedNDJSON(t, r, "weather", snapshot.ShapeSpec{Where: where}, policy)
		if where == "true)) OR ((true" {
			wantCode(t, where, err, store.CodeInvalid)
			continue
		}
		if err != nil || got != want {
			t.Errorf("where %q: err %v, %d bytes, want %d", where, err, len(got), len(want))
		}
	}
	got, _, err := shapedNDJSON(t, r, "weather", snapshot.ShapeSpec{Where: "wind > 5", Columns: []string{"wind"}}, policy)
	if err != nil || got != queryNDJSON(t, r, "SELECT wind FROM weather WHERE weather = 'sun' AND wind > 5") {
		t.Errorf("shape within the policy: err %v", err)
	}
	for _, spec := range []snapshot.ShapeSpec{{Where: "temp_max > 0"}, {Columns: []string{"temp_max"}}, {Where: "weather = 'rain'"}} {
		_, _, hidden := shapedNDJSON(t, r, "weather", spec, policy)
		missing := snapshot.ShapeSpec{Where: strings.ReplaceAll(spec.Where, spec.Where[:strings.IndexAny(spec.Where+" ", " ")], "nosuch")}
		if spec.Columns != nil {
			missing = snapshot.ShapeSpec{Columns: []string{"nosuch"}}
		}
		_, _, absent := shapedNDJSON(t, r, "weather", missing, policy)
		hs, as := wantCode(t, "hidden", hidden, store.CodeInvalid), wantCode(t, "missing", absent, store.CodeInvalid)
		if strings.Replace(hs.Message, `column "`+hs.Column+`"`, `column "nosuch"`, 1) != as.Message || strings.Contains(hs.Message, "sun") {
			t.Errorf("a hidden column answers %q, a missing one %q", hs.Message, as.Message)
		}
	}
}
