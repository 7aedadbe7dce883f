package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/ducktail/ducktail/api/client"
)

// readAll reads the table's snapshot with ReadSnapshot and returns it with the n and s
// columns of every batch, copied out during fn, and the number of batches.
func readAll(t *testing.T, e *env, opts client.Options) (*client.Snapshot, []int64, []string, int) {
	t.Helper()
	var ns []int64
	var ss []string
	batches := 0
	snap, err := client.ReadSnapshot(context.Background(), e.URL(), e.admin, opts, func(rec arrow.RecordBatch) error {
		batches++
		ns = append(ns, rec.Column(0).(*array.Int64).Int64Values()...)
		s := rec.Column(1).(*array.String)
		for i := range s.Len() {
			ss = append(ss, strings.Clone(s.Value(i)))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ReadSnapshot: %v", err)
	}
	return snap, ns, ss, batches
}

// TestReadSnapshotReadsEveryRowOnce reads a table of several commits and many record
// batches (each read into memory an earlier batch freed): every row once, in commit
// order, with its values; the cursor is the table's head, and a Stream from it carries
// exactly the rows committed after the read.
func TestReadSnapshotReadsEveryRowOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	for i := range 4 {
		e.ingestNumbers("t", i*5000, 5000, 0)
	}
	snap, ns, ss, batches := readAll(t, e, client.Options{Table: "t"})
	want := e.tableNs("t")
	if len(want) != 20000 || !slices.Equal(ns, want) {
		t.Fatalf("ReadSnapshot read %d rows, the table has %d (first read %v)", len(ns), len(want), ns[:min(len(ns), 5)])
	}
	for i, s := range ss {
		if s != fmt.Sprintf("row %d", ns[i]) {
			t.Fatalf("row %d: s = %q, want %q", i, s, fmt.Sprintf("row %d", ns[i]))
		}
	}
	if snap.Cursor != e.head("t") {
		t.Fatalf("cursor %q, want the table's head %q", snap.Cursor, e.head("t"))
	}
	if snap.Schema == nil || snap.Schema.NumFields() != 2 || snap.Records != nil || batches < 8 {
		t.Fatalf("snapshot schema %v, records %v, %d batches", snap.Schema, snap.Records, batches)
	}

	e.ingestNumbers("t", 20000, 10, 0)
	c := &collector{}
	o := c.options("t", client.FramingSSE, heartbeat)
	o.Cursor = snap.Cursor
	r := run(t, func(ctx context.Context) error { return client.Stream(ctx, e.URL(), e.admin, o) })
	eventually(t, "the stream from the snapshot's cursor delivers the later commit", func() bool {
		got, _, _, _ := c.state()
		return len(got) >= 10
	})
	r.stop()
	got, _, _, _ := c.state()
	if !slices.Equal(append(ns, got...), e.tableNs("t")) {
		t.Fatalf("snapshot then stream: %d + %d rows, want the table's %d, streamed %v", len(ns), len(got), len(e.tableNs("t")), got)
	}
}

// TestReadSnapshotRetainedBatchKeepsItsValues retains the first batch in fn and reads
// it after every later batch was read: its memory is not reused while it is held, and
// the later batches, read into reused memory, are intact too. Every full batch (2,048
// rows of n and "row N", about 45 KB of message body) is of one size class, so later
// batches are read into the memory of earlier ones: the n column of some batch starts
// where an earlier one's did.
func TestReadSnapshotRetainedBatchKeepsItsValues(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	e.ingestNumbers("t", 0, 12000, 0)
	var first arrow.RecordBatch
	var later []int64
	seen := map[*int64]bool{}
	reused := false
	_, err := client.ReadSnapshot(context.Background(), e.URL(), e.admin, client.Options{Table: "t"}, func(rec arrow.RecordBatch) error {
		values := rec.Column(0).(*array.Int64).Int64Values()
		if first == nil {
			rec.Retain()
			first = rec
			return nil
		}
		reused = reused || seen[unsafe.SliceData(values)]
		seen[unsafe.SliceData(values)] = true
		later = append(later, values...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	n := first.Column(0).(*array.Int64)
	s := first.Column(1).(*array.String)
	if n.Len() == 0 || n.Len() == 12000 {
		t.Fatalf("the first batch holds %d rows: the test needs several batches", n.Len())
	}
	for i := range n.Len() {
		if n.Value(i) != int64(i) || s.Value(i) != fmt.Sprintf("row %d", i) {
			t.Fatalf("retained row %d reads (%d, %q) after the read", i, n.Value(i), s.Value(i))
		}
	}
	for i, v := range later {
		if v != int64(n.Len()+i) {
			t.Fatalf("later row %d reads %d, want %d", i, v, n.Len()+i)
		}
	}
	if len(later) != 12000-n.Len() || !reused {
		t.Fatalf("%d later rows, memory reused: %v", len(later), reused)
	}
}

// TestReadSnapshotShapeAndEmptyTable reads through a shape (the rows its predicate
// matches, its columns) and an empty table (a schema, no batch).
func TestReadSnapshotShapeAndEmptyTable(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	e.ingestNumbers("t", 0, 100, 0)
	var ns []int64
	snap, err := client.ReadSnapshot(context.Background(), e.URL(), e.admin,
		client.Options{Table: "t", Shape: client.Shape{Where: "n % 10 = 3", Columns: []string{"n"}}},
		func(rec arrow.RecordBatch) error {
			ns = append(ns, rec.Column(0).(*array.Int64).Int64Values()...)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Schema.NumFields() != 1 || !slices.Equal(ns, []int64{3, 13, 23, 33, 43, 53, 63, 73, 83, 93}) {
		t.Fatalf("shaped snapshot: schema %v, n %v", snap.Schema, ns)
	}

	e.createNumbers("empty")
	calls := 0
	snap, err = client.ReadSnapshot(context.Background(), e.URL(), e.admin, client.Options{Table: "empty"}, func(arrow.RecordBatch) error {
		calls++
		return nil
	})
	if err != nil || calls != 0 || snap.Schema.NumFields() != 2 || snap.Cursor == "" {
		t.Fatalf("empty table: err %v, %d calls, snapshot %+v", err, calls, snap)
	}
}

// TestReadSnapshotErrors: fn's error ends the read as a *HandlerError holding it; a
// missing table is a 404 *StatusError; no table is ErrNoTable.
func TestReadSnapshotErrors(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	e.ingestNumbers("t", 0, 5000, 0)
	stop := errors.New("enough")
	calls := 0
	_, err := client.ReadSnapshot(context.Background(), e.URL(), e.admin, client.Options{Table: "t"}, func(arrow.RecordBatch) error {
		calls++
		return stop
	})
	var he *client.HandlerError
	if !errors.As(err, &he) || he.Handler != "ReadSnapshot" || he.Cursor != "" || !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("fn's error: got %v after %d calls", err, calls)
	}
	_, err = client.ReadSnapshot(context.Background(), e.URL(), e.admin, client.Options{Table: "t"}, func(arrow.RecordBatch) error {
		panic("boom")
	})
	if !errors.As(err, &he) || !strings.Contains(he.Err.Error(), "boom") {
		t.Fatalf("fn's panic: got %v", err)
	}

	_, err = client.ReadSnapshot(context.Background(), e.URL(), e.admin, client.Options{Table: "nope"}, func(arrow.RecordBatch) error { return nil })
	var se *client.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || se.Problem.Code == "" {
		t.Fatalf("missing table: got %v", err)
	}
	if _, err := client.ReadSnapshot(context.Background(), e.URL(), e.admin, client.Options{}, nil); !errors.Is(err, client.ErrNoTable) {
		t.Fatalf("no table: got %v", err)
	}
	if _, err := client.ReadSnapshot(context.Background(), e.URL(), e.admin, client.Options{Table: "t"}, nil); !errors.Is(err, client.ErrNoHandler) {
		t.Fatalf("no function: got %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err = client.ReadSnapshot(ctx, e.URL(), e.admin, client.Options{Table: "t"}, func(arrow.RecordBatch) error {
		calls++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("canceled in the first batch: got %v after %d calls", err, calls)
	}
}

// TestReadSnapshotRefusesAStreamWithoutItsEnd serves the real server's Arrow snapshot
// through a stand-in for a proxy that ends it cleanly after its first record batch,
// without the end-of-stream marker (the server itself aborts a failed snapshot, a broken
// body): ReadSnapshot hands over that batch, then fails with ErrTruncatedSnapshot. The
// whole snapshot, served the same way, reads whole.
func TestReadSnapshotRefusesAStreamWithoutItsEnd(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	e.ingestNumbers("t", 0, 5000, 0)
	status, whole := e.do("GET", "/v1/tables/t/snapshot", nil, "Accept: application/vnd.apache.arrow.stream")
	if status != http.StatusOK {
		t.Fatalf("snapshot: %d %s", status, whole)
	}
	rd, err := ipc.NewReader(bytes.NewReader(whole))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	var cut bytes.Buffer
	w := ipc.NewWriter(&cut, ipc.WithSchema(rd.Schema()))
	if !rd.Next() {
		t.Fatal("the snapshot holds no record batch")
	}
	if err := w.Write(rd.RecordBatch()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
		rows int64
		want error
	}{
		{"whole", whole, 5000, nil},
		{"cut after the first batch", cut.Bytes(), rd.RecordBatch().NumRows(), client.ErrTruncatedSnapshot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/vnd.apache.arrow.stream")
				w.Header().Set("Ducktail-Cursor", e.head("t"))
				w.Write(tc.body)
			}))
			defer proxy.Close()
			var rows int64
			_, err := client.ReadSnapshot(context.Background(), proxy.URL, e.admin, client.Options{Table: "t"}, func(rec arrow.RecordBatch) error {
				rows += rec.NumRows()
				return nil
			})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || rows != tc.rows {
				t.Fatalf("got %v after %d rows, want %v after %d", err, rows, tc.want, tc.rows)
			}
		})
	}
}
