package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// lockedBuffer is an io.Writer the test reads while tail writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startMain runs the real server (TLS with its self-signed certificate, as `ducktail
// serve` does) on dir and addr.
func startMain(t *testing.T, dir, addr string) *Main {
	t.Helper()
	m := NewMain()
	m.DataDir, m.Addr = dir, addr
	m.Logger, m.Out = slog.New(slog.DiscardHandler), io.Discard
	m.Hub.Retry = 10 * time.Millisecond
	m.DrainTimeout, m.DrainSpread = 5*time.Second, 0
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTailFromSnapshotSurvivesRestart runs `ducktail tail t --from-snapshot --format
// ndjson` against the real server, restarts the server (same directory, same port) while
// it runs, and checks that it printed exactly the table's rows, in order, once each, and
// reported its status on stderr.
func TestTailFromSnapshotSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	m := startMain(t, dir, "127.0.0.1:0")
	u, _ := url.Parse(m.URL)
	cfg := clientConfig{server: m.URL, dataDir: dir}
	c, err := cfg.newClient()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.doJSON("POST", "/v1/tables", map[string]any{"name": "t", "columns": []map[string]string{{"name": "n", "type": "BIGINT"}, {"name": "s", "type": "VARCHAR"}}}, nil); err != nil {
		t.Fatal(err)
	}
	ingest := func(first, count int) {
		t.Helper()
		var b strings.Builder
		for n := first; n < first+count; n++ {
			fmt.Fprintf(&b, "{\"n\":%d,\"s\":\"row %d\"}\n", n, n)
		}
		req, err := c.request("POST", "/v1/tables/t/rows", strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := c.do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ingest(1, 3)

	var stdout, stderr lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCommand()
	root.SetArgs([]string{"tail", "t", "--server", m.URL, "--data-dir", dir, "--from-snapshot", "--format", "ndjson"})
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	lines := func() []string { return strings.Split(strings.TrimSpace(stdout.String()), "\n") }
	waitRows := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(lines()) < n || !strings.Contains(stderr.String(), ": live") {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %d rows; stdout:\n%s\nstderr:\n%s", n, stdout.String(), stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitRows(3)
	ingest(4, 2)
	waitRows(5)
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	m = startMain(t, dir, u.Host)
	defer m.Close(context.Background())
	ingest(6, 3)
	waitRows(8)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tail returned %v", err)
	}
	var got []string
	for _, line := range lines() {
		var row struct {
			N int64
			S string
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%d:%s", row.N, row.S))
	}
	want := []string{"1:row 1", "2:row 2", "3:row 3", "4:row 4", "5:row 5", "6:row 6", "7:row 7", "8:row 8"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("tail printed %v, want %v", got, want)
	}
	if first := lines()[0]; first != `{"n":1,"s":"row 1"}` {
		t.Fatalf("first line %q: keys in column order, values as the server writes them", first)
	}
	for _, status := range []string{"connecting", "live", "reconnecting"} {
		if !strings.Contains(stderr.String(), "ducktail tail t: "+status) {
			t.Errorf("stderr lacks status %q:\n%s", status, stderr.String())
		}
	}
}

// TestRowPrinters prints a schema, then one record, in each format: NULL and the empty
// string told apart, a tab made harmless, the header once.
func TestRowPrinters(t *testing.T) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 0}, []bool{true, false})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a\tb", ""}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, tc := range []struct{ format, want string }{
		{"ndjson", "{\"n\":1,\"s\":\"a\\tb\"}\n{\"n\":null,\"s\":\"\"}\n"},
		{"csv", "n,s\r\n1,a\tb\r\n,\"\"\r\n"},
		{"table", "n     s\n----  ---\n1     a b\nNULL\n"},
	} {
		var out bytes.Buffer
		p, err := newRowPrinter(tc.format, &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := printRecords(p, rec.Schema(), nil); err != nil {
			t.Fatal(err)
		}
		if err := printRecords(p, rec.Schema(), []arrow.RecordBatch{rec}); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.format, out.String(), tc.want)
		}
	}
	if _, err := newRowPrinter("xml", io.Discard); err == nil {
		t.Error("--format xml accepted")
	}
}

// TestTablePrinterAlignsHeaders prints two batches, the second with wider values: each
// header lines up with the rows under it, and the header comes again when the columns
// widen.
func TestTablePrinterAlignsHeaders(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "city", Type: arrow.BinaryTypes.String},
	}, nil)
	batch := func(ns []int64, cities []string) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(ns, nil)
		b.Field(1).(*array.StringBuilder).AppendValues(cities, nil)
		return b.NewRecordBatch()
	}
	first, second, third := batch([]int64{1, 2}, []string{"Seattle", "Oslo"}), batch([]int64{123456}, []string{"Rome"}), batch([]int64{7}, []string{"Bern"})
	defer first.Release()
	defer second.Release()
	defer third.Release()
	var out bytes.Buffer
	p, err := newRowPrinter("table", &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, recs := range [][]arrow.RecordBatch{nil, {first}, {second}, {third}} {
		if err := printRecords(p, schema, recs); err != nil {
			t.Fatal(err)
		}
	}
	want := "n  city\n-  -------\n1  Seattle\n2  Oslo\n" +
		"n       city\n------  -------\n123456  Rome\n7       Bern\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestTailHelpAndRefusals: `tail --help` names the default start once, and a refusal
// reads as other commands write theirs ("404 not_found: …").
func TestTailHelpAndRefusals(t *testing.T) {
	var stdout bytes.Buffer
	root := newRootCommand()
	root.SetOut(&stdout)
	root.SetArgs([]string{"tail", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if help := stdout.String(); !strings.Contains(help, "print the commits after tail connects (the default)\n") || strings.Contains(help, "(default true)") {
		t.Fatalf("tail --help:\n%s", help)
	}
	st := startStack(t)
	_, err := st.tryCLI("tail", "nosuch", "--format", "ndjson")
	if err == nil || !strings.HasPrefix(err.Error(), "404 not_found: ") {
		t.Fatalf("tail of a missing table: %v, want 404 not_found: …", err)
	}
}

// TestTailShaped runs `ducktail tail t --from-snapshot --where … --columns n`: it prints
// only the matching rows with only the named column, the snapshot's and the later
// commits' alike.
func TestTailShaped(t *testing.T) {
	dir := t.TempDir()
	m := startMain(t, dir, "127.0.0.1:0")
	defer m.Close(context.Background())
	cfg := clientConfig{server: m.URL, dataDir: dir}
	c, err := cfg.newClient()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.doJSON("POST", "/v1/tables", map[string]any{"name": "t", "columns": []map[string]string{{"name": "n", "type": "BIGINT"}, {"name": "s", "type": "VARCHAR"}}}, nil); err != nil {
		t.Fatal(err)
	}
	ingest := func(first, count int) {
		t.Helper()
		var b strings.Builder
		for n := first; n < first+count; n++ {
			fmt.Fprintf(&b, "{\"n\":%d,\"s\":\"row %d\"}\n", n, n)
		}
		req, err := c.request("POST", "/v1/tables/t/rows", strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := c.do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ingest(1, 6)
	var stdout, stderr lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCommand()
	root.SetArgs([]string{"tail", "t", "--server", m.URL, "--data-dir", dir, "--from-snapshot", "--format", "ndjson", "--where", "n % 2 = 0", "--columns", "n"})
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	lines := func() []string { return strings.Split(strings.TrimSpace(stdout.String()), "\n") }
	waitRows := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(lines()) < n || !strings.Contains(stderr.String(), ": live") {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %d rows; stdout:\n%s\nstderr:\n%s", n, stdout.String(), stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitRows(3)
	ingest(7, 4)
	waitRows(5)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tail returned %v", err)
	}
	if got := strings.Join(lines(), " "); got != `{"n":2} {"n":4} {"n":6} {"n":8} {"n":10}` {
		t.Fatalf("tail printed %s", got)
	}
}

// TestRowPrintersShowNestedValues: a STRUCT, a LIST and an INTERVAL print readably in every
// format, nested values as their JSON text.
func TestRowPrintersShowNestedValues(t *testing.T) {
	geo := arrow.StructOf(arrow.Field{Name: "lat", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "geo", Type: geo, Nullable: true},
		{Name: "iv", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(
		`[{"geo": {"lat": 38.5, "tags": ["a", "b c"]}, "iv": {"months": 1, "days": 2, "nanoseconds": 3000000000}}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, tc := range []struct{ format, want string }{
		{"ndjson", `{"geo":{"lat":38.5,"tags":["a","b c"]},"iv":"P1M2DT3S"}` + "\n"},
		{"csv", "geo,iv\r\n\"{\"\"lat\"\":38.5,\"\"tags\"\":[\"\"a\"\",\"\"b c\"\"]}\",P1M2DT3S\r\n"},
		{"table", "geo                              iv\n-------------------------------  --------\n{\"lat\":38.5,\"tags\":[\"a\",\"b c\"]}  P1M2DT3S\n"},
	} {
		var out bytes.Buffer
		p, err := newRowPrinter(tc.format, &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := printRecords(p, schema, []arrow.RecordBatch{rec}); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.format, out.String(), tc.want)
		}
	}
}
