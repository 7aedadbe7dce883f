package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

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
