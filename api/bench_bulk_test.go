package api_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/ducktail/ducktail/api"
	dtclient "github.com/ducktail/ducktail/api/client"
	"github.com/ducktail/ducktail/store"
)

// bulkServer is a ducktail server as `make run` runs it: TLS with a self-signed
// certificate on loopback, HTTP/2 by ALPN, in this process (so that -cpuprofile profiles
// it), with the CLI built from ../cmd/ducktail as its client. The same API also listens
// in plaintext (HTTP/1.1), as behind a proxy that ends TLS.
type bulkServer struct {
	db    *store.DB
	url   string
	cert  string
	admin string
	cli   string
	// client speaks HTTP/2 over TLS to url; plainURL is the plaintext listener's.
	client   *http.Client
	plainURL string
	// loaded is the name of a table holding the flights file, "" until one is.
	loaded string
	tables int
}

// buildCLI builds the ducktail command into dir and returns its path.
func buildCLI(b *testing.B, dir string) string {
	b.Helper()
	bin := filepath.Join(dir, "ducktail")
	out, err := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", bin, "../cmd/ducktail").CombinedOutput()
	if err != nil {
		b.Fatalf("go build ../cmd/ducktail: %v\n%s", err, out)
	}
	return bin
}

func startBulkServer(b *testing.B) *bulkServer {
	b.Helper()
	if _, err := os.Stat(benchFlightsFile); errors.Is(err, os.ErrNotExist) {
		b.Skip("run `make bench-data` first: " + benchFlightsFile + " is missing")
	}
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("the go command builds the CLI: " + err.Error())
	}
	dir := b.TempDir()
	cli := buildCLI(b, dir)
	db, _, handler := openStack(b, filepath.Join(dir, "ducktail.duckdb"), options{})
	certFile, keyFile, _, err := api.EnsureSelfSignedCert(filepath.Join(dir, "tls"), nil)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := api.NewHTTPServer(ln.Addr().String(), handler, false)
	go srv.ServeTLS(ln, certFile, keyFile)
	plainLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	plain := api.NewHTTPServer(plainLn.Addr().String(), handler, true)
	go plain.Serve(plainLn)
	b.Cleanup(func() { srv.Close(); plain.Close(); db.Close() })
	_, admin, err := db.CreateToken(context.Background(), store.PurposeAdmin, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	client, err := dtclient.NewHTTPClient(certFile)
	if err != nil {
		b.Fatal(err)
	}
	return &bulkServer{db: db, url: "https://" + ln.Addr().String(), cert: certFile, admin: admin, cli: cli,
		client: client, plainURL: "http://" + plainLn.Addr().String()}
}

// ingestFile runs `ducktail ingest TABLE FILE --create` with the flags in extra against
// the server in a new table and returns the table's name, the rows it holds and the CPU
// time (user + system) the CLI process used.
func (s *bulkServer) ingestFile(b *testing.B, extra ...string) (string, int64, time.Duration) {
	b.Helper()
	s.tables++
	table := fmt.Sprintf("flights_%d", s.tables)
	path, _ := filepath.Abs(benchFlightsFile)
	cmd := exec.Command(s.cli, append([]string{"ingest", table, path, "--create", "--server", s.url, "--token", s.admin, "--ca-cert", s.cert}, extra...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("ducktail ingest: %v\n%s", err, out)
	}
	info, err := s.db.Table(table)
	if err != nil {
		b.Fatal(err)
	}
	s.loaded = table
	return table, info.Rows, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// readSnapshot reads the table's Arrow IPC snapshot with the Go client's ReadSnapshot,
// over HTTP/2 with TLS, or with plaintext over HTTP/1.1, and returns the rows read.
func (s *bulkServer) readSnapshot(b *testing.B, table string, plaintext bool) int64 {
	b.Helper()
	base, client := s.url, s.client
	if plaintext {
		base, client = s.plainURL, http.DefaultClient
	}
	var rows int64
	_, err := dtclient.ReadSnapshot(context.Background(), base, s.admin, dtclient.Options{Table: table, HTTPClient: client},
		func(rec arrow.RecordBatch) error {
			rows += rec.NumRows()
			return nil
		})
	if err != nil {
		b.Fatal(err)
	}
	return rows
}

// duckdbLoad makes a fresh DuckDB file and loads the flights file into table t with
// DuckDB's own CREATE TABLE … AS SELECT * FROM read_parquet(…); it returns the open
// database and how long the statement took.
func duckdbLoad(b *testing.B) (*sql.DB, time.Duration) {
	b.Helper()
	path, _ := filepath.Abs(benchFlightsFile)
	db, err := sql.Open("duckdb", filepath.Join(b.TempDir(), "duckdb.duckdb"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := db.Exec("CREATE TABLE t AS SELECT * FROM read_parquet('" + path + "')"); err != nil {
		b.Fatal(err)
	}
	return db, time.Since(start)
}

// duckdbArrowRead reads every row of t through duckdb-go's Arrow interface and returns
// the rows read.
func duckdbArrowRead(b *testing.B, db *sql.DB) int64 {
	b.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var rows int64
	err = conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		rr, err := ar.QueryContext(context.Background(), "SELECT * FROM t")
		if err != nil {
			return err
		}
		defer rr.Release()
		for rr.Next() {
			rows += rr.RecordBatch().NumRows()
		}
		return rr.Err()
	})
	if err != nil {
		b.Fatal(err)
	}
	return rows
}

// BenchmarkBulk compares ducktail's bulk paths with DuckDB's own on the 3M-row flights
// Parquet file, both sides in each iteration of the same run:
//
//   - load: `ducktail ingest flights_N FILE --create` (the CLI, a child process, which
//     sends the 13 MiB file whole, one commit the server decodes, over HTTP/2 with
//     TLS, timed from its start to its exit) against DuckDB's `CREATE TABLE t AS
//     SELECT * FROM read_parquet(FILE)` into a fresh DuckDB file; load-chunked the
//     same with --chunk-rows 491520, the CLI decoding the file and sending its rows as
//     Arrow IPC in 7 commits (the path of Parquet files past 32 MiB and of Arrow files);
//   - snapshot: GET /v1/tables/flights_N/snapshot as an Arrow IPC stream over HTTP/2
//     with TLS, read and decoded by the Go client's ReadSnapshot (in this process),
//     against duckdb-go's Arrow reader over `SELECT * FROM t`; snapshot-plaintext the
//     same over plaintext HTTP/1.1.
//
// rows/s is ducktail's, duckdb-rows/s DuckDB's, ratio the second's time over the first's;
// the CPU seconds (user + system, of the server process, which also runs the snapshot's
// client, and of the CLI process) say what each side costs whatever else the machine
// runs.
func BenchmarkBulk(b *testing.B) {
	s := startBulkServer(b)
	for _, load := range []struct {
		name  string
		extra []string
	}{{"load", nil}, {"load-chunked", []string{"--chunk-rows", "491520"}}} {
		b.Run(load.name, func(b *testing.B) {
			var ours, theirs, serverCPU, cliCPU, duckdbCPU time.Duration
			var rows int64
			for range b.N {
				start, cpu := time.Now(), processCPU()
				_, n, cli := s.ingestFile(b, load.extra...)
				ours += time.Since(start)
				serverCPU += processCPU() - cpu
				cliCPU += cli
				cpu = processCPU()
				_, took := duckdbLoad(b)
				duckdbCPU += processCPU() - cpu
				theirs += took
				rows += n
			}
			reportBulk(b, rows, ours, theirs)
			b.ReportMetric(serverCPU.Seconds()/float64(b.N), "server-cpu-s/op")
			b.ReportMetric(cliCPU.Seconds()/float64(b.N), "cli-cpu-s/op")
			b.ReportMetric(duckdbCPU.Seconds()/float64(b.N), "duckdb-cpu-s/op")
		})
	}
	for _, plaintext := range []bool{false, true} {
		name := "snapshot"
		if plaintext {
			name = "snapshot-plaintext"
		}
		b.Run(name, func(b *testing.B) {
			if s.loaded == "" {
				s.ingestFile(b)
			}
			db, _ := duckdbLoad(b)
			b.ResetTimer()
			var ours, theirs, cpuOurs, cpuTheirs time.Duration
			var rows int64
			for range b.N {
				start, cpu := time.Now(), processCPU()
				n := s.readSnapshot(b, s.loaded, plaintext)
				ours += time.Since(start)
				cpuOurs += processCPU() - cpu
				start, cpu = time.Now(), processCPU()
				if m := duckdbArrowRead(b, db); m != n {
					b.Fatalf("DuckDB read %d rows, the snapshot %d", m, n)
				}
				theirs += time.Since(start)
				cpuTheirs += processCPU() - cpu
				rows += n
			}
			reportBulk(b, rows, ours, theirs)
			b.ReportMetric(cpuOurs.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(cpuTheirs.Seconds()/float64(b.N), "duckdb-cpu-s/op")
		})
	}
}

func reportBulk(b *testing.B, rows int64, ours, theirs time.Duration) {
	b.ReportMetric(float64(rows)/ours.Seconds(), "rows/s")
	b.ReportMetric(float64(rows)/theirs.Seconds(), "duckdb-rows/s")
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "ratio")
}
