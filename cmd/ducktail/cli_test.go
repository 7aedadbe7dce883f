package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// cli runs the ducktail command line with args against the stack, as a user would
// (the token and the certificate from the data directory), and returns stdout.
func (st *stack) cli(t *testing.T, args ...string) string {
	t.Helper()
	out, err := st.tryCLI(args...)
	if err != nil {
		t.Fatalf("ducktail %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (st *stack) tryCLI(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	root := newRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	full := append(args, "--server", st.URL(), "--data-dir", st.dir)
	root.SetArgs(full)
	err := root.ExecuteContext(context.Background())
	return stdout.String() + stderr.String(), err
}

func TestFirstStartMakesAdminTokenOnce(t *testing.T) {
	st := startStack(t)
	path := filepath.Join(st.dir, adminTokenFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if strings.TrimSpace(string(b)) != st.admin || st.admin == "" {
		t.Fatalf("admin.token %q, Main made %q", b, st.admin)
	}
	st.restart(t)
	if st.main.AdminToken != "" {
		t.Fatal("a restart made another admin token")
	}
	if _, err := os.Stat(filepath.Join(st.dir, tlsDir, "cert.pem")); err != nil {
		t.Fatalf("self-signed certificate: %v", err)
	}
}

func TestCLIWalkThrough(t *testing.T) {
	st := startStack(t)
	out := st.cli(t, "ingest", "weather", "../../testdata/seattle-weather.csv", "--create", "--chunk-rows", "500")
	if !strings.Contains(out, "ingested 1461 rows in 3 commits") {
		t.Fatalf("ingest: %s", out)
	}
	out = st.cli(t, "table", "describe", "weather")
	for _, want := range []string{"rows 1461, seq 3", "temp_max", "DOUBLE", "date", "DATE"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	out = st.cli(t, "query", "SELECT weather, count(*) AS days FROM weather GROUP BY weather ORDER BY days DESC, weather", "--format", "csv")
	if !strings.HasPrefix(out, "weather,days\r\nrain,641\r\nsun,640\r\n") {
		t.Fatalf("query csv:\n%q", out)
	}
	out = st.cli(t, "query", "SELECT count(*) AS n FROM weather WHERE weather = $1", "--param", "fog", "--format", "table")
	if !strings.Contains(out, "101") || !strings.Contains(out, "(1 row)\n") {
		t.Fatalf("query table:\n%s", out)
	}
	// A second run of the same file commits again (keys are bound to the activation
	// only within one run), and a retried chunk never commits twice (see ingest.go).
	st.cli(t, "table", "reset", "weather")
	st.cli(t, "ingest", "weather", "../../testdata/seattle-weather.csv")
	if out := st.cli(t, "query", "SELECT count(*) AS n FROM weather", "--format", "json"); !strings.Contains(out, `"n":1461`) {
		t.Fatalf("after reset and re-ingest: %s", out)
	}

	// Schema changes.
	st.cli(t, "table", "add-column", "weather", "station", "VARCHAR")
	st.cli(t, "table", "rename-column", "weather", "wind", "wind_speed")
	out = st.cli(t, "table", "drop-column", "weather", "temp_min")
	if !strings.Contains(out, "wind_speed") || strings.Contains(out, "temp_min") || !strings.Contains(out, "station") {
		t.Fatalf("after schema changes:\n%s", out)
	}

	// Tokens.
	out = st.cli(t, "token", "create", "stream", "--table", "weather", "--ttl", "1h")
	secret := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if !strings.HasPrefix(secret, "dt_") {
		t.Fatalf("token create: %s", out)
	}
	id := secret[3:19]
	if out := st.cli(t, "token", "list"); !strings.Contains(out, id) || strings.Contains(out, secret[20:]) {
		t.Fatalf("token list:\n%s", out)
	}
	st.cli(t, "token", "revoke", id)
	// A policy token reads only its policy's rows and columns.
	out = st.cli(t, "token", "create", "query", "--table", "weather", "--where", "weather = 'snow'", "--columns", "date,weather")
	policy := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if out, err := st.tryCLI("query", "SELECT weather, count(*) AS n FROM weather GROUP BY ALL", "--token", policy, "--format", "csv"); err != nil || strings.Contains(out, "sun") || !strings.Contains(out, "snow") {
		t.Fatalf("query through the policy: %v\n%s", err, out)
	}
	if _, err := st.tryCLI("table", "list", "--token", secret); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("revoked token: %v", err)
	}

	// Bad input: a clear error naming the line, nothing committed.
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("date,precipitation,temp_max,wind_speed,weather,station\n2016-01-01,oops,1,3,sun,x\n"), 0o644)
	if _, err := st.tryCLI("ingest", "weather", bad); err == nil || !strings.Contains(err.Error(), "precipitation") || !strings.Contains(err.Error(), "row 1") {
		t.Fatalf("bad CSV: %v", err)
	}
	st.cli(t, "table", "drop", "weather")
	if out := st.cli(t, "table", "list"); strings.Contains(out, "weather") {
		t.Fatalf("after drop:\n%s", out)
	}
}

// TestCLIIngestsEveryFileFormat sends real data as JSON, NDJSON, Arrow IPC file and
// stream, and Parquet, in several chunks each.
func TestCLIIngestsEveryFileFormat(t *testing.T) {
	st := startStack(t)
	dir := t.TempDir()
	flights, _ := os.ReadFile("../../testdata/flights-20k.json")
	var rows []json.RawMessage
	json.Unmarshal(flights, &rows)
	var nd bytes.Buffer
	for _, r := range rows {
		nd.Write(r)
		nd.WriteByte('\n')
	}
	os.WriteFile(filepath.Join(dir, "flights.ndjson"), nd.Bytes(), 0o644)
	parquetPath := filepath.Join(dir, "small.parquet")
	writeParquet(t, parquetPath)
	for _, c := range []struct{ table, file, want string }{
		{"f_json", "../../testdata/flights-20k.json", "ingested 20000 rows in 3 commits"},
		{"f_ndjson", filepath.Join(dir, "flights.ndjson"), "ingested 20000 rows in 3 commits"},
		{"f_arrow", "../../testdata/flights-200k.arrow", "ingested 200000 rows in 21 commits"},
		{"f_parquet", parquetPath, "ingested 2500 rows in 1 commits"},
	} {
		out := st.cli(t, "ingest", c.table, c.file, "--create", "--chunk-rows", "9999")
		if !strings.Contains(out, c.want) {
			t.Fatalf("%s: %s", c.file, out)
		}
	}
	out := st.cli(t, "query", "SELECT (SELECT count(*) FROM f_json) AS a, (SELECT count(*) FROM (SELECT * FROM f_json EXCEPT ALL SELECT * FROM f_ndjson)) AS diff, (SELECT sum(n) FROM f_parquet) AS s", "--format", "json")
	if !strings.Contains(out, `"a":20000`) || !strings.Contains(out, `"diff":0`) || !strings.Contains(out, `"s":3126250`) {
		t.Fatalf("formats disagree: %s", out)
	}

	// Columns of large_utf8 and large_binary are sent with 32-bit offsets, chunk by chunk
	// (slices of the file's batches): every value arrives whole and in its row.
	largePath := filepath.Join(dir, "large.parquet")
	writeLargeParquet(t, largePath)
	if out := st.cli(t, "ingest", "f_large", largePath, "--create", "--chunk-rows", "999"); !strings.Contains(out, "ingested 2500 rows in 3 commits") {
		t.Fatalf("%s: %s", largePath, out)
	}
	out = st.cli(t, "query", "SELECT count(*) AS whole FROM f_large WHERE label = 'row-' || n AND raw = encode(label)", "--format", "json")
	if !strings.Contains(out, `"whole":2500`) {
		t.Fatalf("large_utf8 and large_binary values changed on the way: %s", out)
	}
}

// writeLargeParquet writes n = 1..2500, label = "row-<n>" as large_utf8 and raw, its
// bytes, as large_binary, as Parquet that pqarrow reads back with those types.
func writeLargeParquet(t *testing.T, path string) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.BinaryTypes.LargeString}, {Name: "raw", Type: arrow.BinaryTypes.LargeBinary}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := 1; i <= 2500; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.LargeStringBuilder).Append(fmt.Sprint("row-", i))
		b.Field(2).(*array.BinaryBuilder).Append([]byte(fmt.Sprint("row-", i)))
	}
	writeParquetRecord(t, path, b.NewRecordBatch(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
}

// writeParquet writes n = 1..2500 and a label, as Parquet.
func writeParquet(t *testing.T, path string) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}, {Name: "label", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := 1; i <= 2500; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("row")
	}
	writeParquetRecord(t, path, b.NewRecordBatch(), pqarrow.DefaultWriterProps())
}

// writeParquetRecord writes rec to path as a Parquet file with the Arrow properties props.
func writeParquetRecord(t *testing.T, path string, rec arrow.RecordBatch, props pqarrow.ArrowWriterProperties) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, nil, props)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestEnvironmentConfiguresFlags(t *testing.T) {
	st := startStack(t)
	t.Setenv("DUCKTAIL_SERVER", st.URL())
	t.Setenv("DUCKTAIL_DATA_DIR", st.dir)
	var stdout bytes.Buffer
	root := newRootCommand()
	root.SetOut(&stdout)
	root.SetArgs([]string{"table", "list"})
	if err := root.ExecuteContext(context.Background()); err != nil || !strings.Contains(stdout.String(), "NAME") {
		t.Fatalf("DUCKTAIL_* variables: %v %s", err, stdout.String())
	}
	t.Setenv("DUCKTAIL_TOKEN", "dt_0123456789abcdef_"+strings.Repeat("a", 52))
	root = newRootCommand()
	root.SetArgs([]string{"table", "list"})
	root.SetOut(io.Discard)
	if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("DUCKTAIL_TOKEN was not used: %v", err)
	}
}

// TestShutdownDrainsStreams closes Main while a stream is open: the stream gets
// reconnect server_draining before the server stops.
func TestShutdownDrainsStreams(t *testing.T) {
	st := startStack(t)
	st.ingest(t, "t", "application/x-ndjson", []byte(`{"n":1}`))
	req, _ := http.NewRequest("GET", st.URL()+"/v1/tables/t/stream", nil)
	req.Header.Set("Authorization", "Bearer "+st.admin)
	resp, err := st.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	var got string
	for !strings.Contains(got, "event: schema") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got += string(buf[:n])
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.stop(t)
	}()
	rest, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(rest), "event: reconnect") || !strings.Contains(string(rest), `"reason":"server_draining"`) {
		t.Fatalf("on shutdown the stream got %q", rest)
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("shutdown did not finish")
	}
}

func TestCorruptSelfSignedCertificateIsRemade(t *testing.T) {
	st := startStack(t)
	st.stop(t)
	os.WriteFile(filepath.Join(st.dir, tlsDir, "cert.pem"), nil, 0o644)
	st.start(t)
	st.admin = strings.TrimSpace(string(must(os.ReadFile(filepath.Join(st.dir, adminTokenFile)))))
	if out := st.cli(t, "table", "list"); !strings.Contains(out, "NAME") {
		t.Fatalf("after remaking the certificate: %s", out)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCLISendsParquetWhole: a Parquet file goes in one commit, the server decoding it,
// unless --chunk-rows is given; and when a server refuses the file whole (here a proxy
// in front of the real one answers 415, as a server without Parquet bodies would) the
// same rows go in Arrow chunks instead, each row once.
func TestCLISendsParquetWhole(t *testing.T) {
	st := startStack(t)
	const file = "../../testdata/flights-20k.parquet"
	if out := st.cli(t, "ingest", "whole", file, "--create"); !strings.Contains(out, "ingested 20000 rows in 1 commits") {
		t.Fatal(out)
	}
	if out := st.cli(t, "ingest", "chunked", file, "--create", "--chunk-rows", "8000"); !strings.Contains(out, "ingested 20000 rows in 3 commits") {
		t.Fatal(out)
	}

	target, _ := url.Parse(st.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = st.client.Transport
	var refused atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") == "application/vnd.apache.parquet" {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnsupportedMediaType)
			io.WriteString(w, `{"status":415,"code":"unsupported_media_type","detail":"unsupported Content-Type"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	var stdout, stderr bytes.Buffer
	root := newRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"ingest", "fallback", file, "--create", "--server", front.URL, "--data-dir", st.dir})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
	}
	if refused.Load() != 1 || !strings.Contains(stderr.String(), "refused the file in one body") ||
		!strings.Contains(stdout.String(), "ingested 20000 rows in 1 commits") {
		t.Fatalf("refused %d times; stdout %s; stderr %s", refused.Load(), stdout.String(), stderr.String())
	}
	out := st.cli(t, "query", "SELECT (SELECT count(*) FROM (SELECT * FROM whole EXCEPT ALL SELECT * FROM chunked)) AS a, (SELECT count(*) FROM (SELECT * FROM chunked EXCEPT ALL SELECT * FROM fallback)) AS b, (SELECT count(*) FROM fallback) AS n", "--format", "json")
	if !strings.Contains(out, `"a":0`) || !strings.Contains(out, `"b":0`) || !strings.Contains(out, `"n":20000`) {
		t.Fatalf("the three loads differ: %s", out)
	}
}
