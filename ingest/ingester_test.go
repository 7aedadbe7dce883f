package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/ducktail/ducktail/store"
)

// openStore opens a real store in a temporary directory.
func openStore(t *testing.T) *store.DB {
	t.Helper()
	db := store.NewDB(filepath.Join(t.TempDir(), "ducktail.duckdb"))
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestIngestCreateOnIngest(t *testing.T) {
	ctx := context.Background()
	in := &Ingester{DB: openStore(t)}
	req := Request{Table: "weather", ContentType: "text/csv", Body: []byte("day,temp\n2024-01-01,3.5\n2024-01-02,4\n")}
	if _, err := in.Ingest(ctx, req); !errors.Is(err, store.ErrTableNotFound) || store.ErrorCode(err) != store.CodeNotFound {
		t.Fatalf("without Create: %v, want CodeNotFound wrapping ErrTableNotFound", err)
	}
	bad := req
	bad.Create, bad.Body = true, []byte("day,day\n1,2\n")
	if _, err := in.Ingest(ctx, bad); store.ErrorCode(err) != store.CodeInvalid {
		t.Fatalf("duplicate header with Create: %v, want CodeInvalid", err)
	}
	if _, err := in.DB.Table("weather"); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("a refused body left a table behind: %v", err)
	}
	req.Create = true
	c, err := in.Ingest(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rows != 2 || c.Duplicate {
		t.Errorf("commit = %+v, want 2 new rows", c)
	}
	info, err := in.DB.Table("weather")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, col := range info.Schema.Columns {
		types = append(types, col.Name+" "+string(col.Type))
	}
	if fmt.Sprint(types) != "[day DATE temp DOUBLE]" {
		t.Errorf("inferred columns %v, want [day DATE temp DOUBLE]", types)
	}
	// With the table there, Create is ignored and the body decodes under its schema.
	if _, err := in.Ingest(ctx, Request{Table: "weather", ContentType: "text/csv", Body: []byte("temp\nwarm\n"), Create: true}); store.ErrorCode(err) != store.CodeUnprocessable {
		t.Errorf("a value that does not fit the existing table: %v, want CodeUnprocessable", err)
	}
}

// Concurrent requests that each create the same table all commit: the ones whose
// CreateTable loses the race use the table the winner created.
func TestIngestConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	in := &Ingester{DB: openStore(t)}
	const n = 8
	var wg sync.WaitGroup
	commits := make([]store.Commit, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			body := fmt.Appendf(nil, `{"n":%d}`, i)
			commits[i], errs[i] = in.Ingest(ctx, Request{Table: "t", ContentType: "application/x-ndjson", Body: body, Create: true})
		})
	}
	wg.Wait()
	seqs := map[int64]bool{}
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
			continue
		}
		if commits[i].Rows != 1 || seqs[commits[i].Position.Seq] {
			t.Errorf("request %d: commit %+v, want one row at a seq of its own", i, commits[i])
		}
		seqs[commits[i].Position.Seq] = true
	}
}

func TestIngestIdempotencyKey(t *testing.T) {
	ctx := context.Background()
	in := &Ingester{DB: openStore(t)}
	req := Request{Table: "t", ContentType: "text/csv", Body: []byte("n\n1\n2\n"), IdempotencyKey: "k1", Create: true}
	first, err := in.Ingest(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// The column the body names is renamed: a retry is answered from the commit log
	// before its body is decoded, so it still answers the first commit.
	if _, err := in.DB.RenameColumn(ctx, "t", "n", "m"); err != nil {
		t.Fatal(err)
	}
	again, err := in.Ingest(ctx, req)
	if err != nil || !again.Duplicate || again.Position != first.Position || again.Rows != 2 {
		t.Fatalf("retry = %+v, %v; want the first commit %+v, Duplicate", again, err, first)
	}
	other := req
	other.Body = []byte("m\n3\n")
	if _, err := in.Ingest(ctx, other); store.ErrorCode(err) != store.CodeConflict {
		t.Errorf("key reused with another body: %v, want CodeConflict", err)
	}
	// The media type is part of what the key stands for.
	other = req
	other.ContentType = "text/csv; charset=utf-8"
	if c, err := in.Ingest(ctx, other); err != nil || !c.Duplicate {
		t.Errorf("same media type with a parameter: %+v, %v; want the first commit", c, err)
	}
	other.ContentType = "application/x-ndjson"
	if _, err := in.Ingest(ctx, other); store.ErrorCode(err) != store.CodeConflict {
		t.Errorf("key reused with another media type: %v, want CodeConflict", err)
	}
}

func TestIngestUnsupportedMediaType(t *testing.T) {
	in := &Ingester{DB: openStore(t)}
	_, err := in.Ingest(context.Background(), Request{Table: "t", ContentType: "text/plain", Body: []byte("n\n1\n"), Create: true})
	if store.ErrorCode(err) != store.CodeUnsupportedMediaType {
		t.Fatalf("text/plain: %v, want CodeUnsupportedMediaType", err)
	}
	if _, err := in.DB.Table("t"); !errors.Is(err, store.ErrTableNotFound) {
		t.Errorf("a refused media type created the table: %v", err)
	}
}

// TestIngestMemoryBudget: what the Parquet reader allocates is charged to the request's
// MemoryBudget until Ingest returns. A body that decodes to 30 MB against a budget of
// 4 MiB can never fit (CodeTooLarge); against 64 MiB of which other requests hold 48 it
// must wait (CodeUnavailable); neither commits anything. Against 1 GiB it commits. The
// budget holds nothing of the request afterwards.
func TestIngestMemoryBudget(t *testing.T) {
	db := openStore(t)
	body := parquetBody(t, batch("c", repeatedString(t, 30_000, 1000)))
	in := Ingester{DB: db}
	small := NewMemoryBudget(4 << 20)
	_, err := in.Ingest(context.Background(), Request{Table: "t", ContentType: parquetType, Body: body, Create: true, Memory: small})
	if codeOf(err) != store.CodeTooLarge || small.Held() != 0 {
		t.Fatalf("30 MB against 4 MiB: %v, %d bytes held after", err, small.Held())
	}
	busy := NewMemoryBudget(64 << 20)
	busy.Charge(48 << 20)
	_, err = in.Ingest(context.Background(), Request{Table: "t", ContentType: parquetType, Body: body, Create: true, Memory: busy})
	if codeOf(err) != store.CodeUnavailable || busy.Held() != 48<<20 {
		t.Fatalf("30 MB against 16 of 64 MiB free: %v, %d bytes held after", err, busy.Held())
	}
	if _, err := db.Table("t"); err == nil {
		t.Fatal("the refused body created the table")
	}
	large := NewMemoryBudget(1 << 30)
	c, err := in.Ingest(context.Background(), Request{Table: "t", ContentType: parquetType, Body: body, Create: true, Memory: large})
	if err != nil || c.Rows != 30_000 || large.Held() != 0 {
		t.Fatalf("30 MB against 1 GiB: %v, %d rows, %d bytes held after", err, c.Rows, large.Held())
	}
}

// TestIngestMemoryBudgetPrepaid: with a budget of exactly what a Parquet decoder prepays,
// the reader's first allocation past it is refused. Those that pqarrow makes in its own
// goroutines come first and must all fall inside the prepayment, or the refusal would
// panic where no recover reaches and end the process: flat columns (read in parallel)
// and a struct of lists and maps (read one after the other) alike end in CodeTooLarge.
func TestIngestMemoryBudgetPrepaid(t *testing.T) {
	db := openStore(t)
	nestedType := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		arrow.Field{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
		arrow.Field{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	)
	row := `{"a":[1,2,3],"m":[{"key":"k","value":1.5}],"s":{"x":"` + strings.Repeat("y", 200) + `"}}`
	nested := fromJSON(t, nestedType, "["+strings.Repeat(row+",", 999)+row+"]")
	for name, body := range map[string][]byte{
		"flights": readTestdata(t, "flights-20k.parquet"),
		"nested":  parquetBody(t, batch("n", nested)),
	} {
		pf, err := file.NewParquetReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		exact := NewMemoryBudget(int64(len(body)) + int64(pf.MetaData().Schema.NumColumns())*parquetLeafPrepay)
		in := Ingester{DB: db}
		_, err = in.Ingest(context.Background(), Request{Table: "t_" + name, ContentType: parquetType, Body: body, Create: true, Memory: exact})
		if codeOf(err) != store.CodeTooLarge || exact.Held() != 0 {
			t.Errorf("%s: %v, %d bytes held after; want CodeTooLarge", name, err, exact.Held())
		}
	}
}
