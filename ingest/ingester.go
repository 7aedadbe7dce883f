package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"mime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

// Request is one ingest request: a body of one media type for one table, committed as
// one commit (docs/design.md, "Ingest": one request = one commit, all or nothing).
type Request struct {
	// Table names the target table.
	Table string
	// ContentType is the body's media type with its parameters, as DecoderFor takes it.
	ContentType string
	// Body is the whole request body. Ingest does not keep it past its return.
	Body []byte
	// IdempotencyKey, when not empty, makes a retry of the same request (same key,
	// media type and body) answer the first commit instead of committing again.
	IdempotencyKey string
	// Create creates a missing table from the body's inferred schema.
	Create bool
	// Writer names the connection the request came from, for group commit
	// (store.Batch.Writer); empty for none.
	Writer string
	// Memory, when not nil, is charged with what the Arrow and Parquet readers allocate
	// decoding Body (at least its size, taken before reading starts) until Ingest
	// returns; a refused charge is its Exhausted error. Text bodies are bounded per body
	// instead (docs/design.md, "Ingest").
	Memory *MemoryBudget
}

// Ingester runs the ingest operation against a store: it owns the policy between the
// decoders and store.DB.Append (idempotent retries, create-on-ingest, the schema-change
// retry), so that the HTTP handler only reads the request and maps the outcome.
type Ingester struct {
	// DB is the store the commits go to.
	DB *store.DB
}

// Ingest decodes req.Body and commits it as one commit, in this order:
//
//   - an IdempotencyKey already committed for the table with the same media type and
//     body is answered from the commit log (Commit.Duplicate set) before the body is
//     decoded, since the table's columns may have changed since the first request;
//   - a missing table with req.Create is created from the body's inferred schema, only
//     once the body decodes under that schema, so that a refused body leaves no table
//     behind; a table created concurrently by another request is used, decoding again;
//   - a schema change between decoding and committing (store.ErrSchemaChanged) is
//     retried once, decoding under the new schema.
//
// Errors are *store.Error: CodeUnsupportedMediaType from DecoderFor, the decoders'
// CodeInvalid, CodeUnprocessable and CodeTooLarge (located by Row, Line and Column),
// CodeNotFound for an unknown table without Create, CodeConflict for a key reused with
// another body, CodeUnavailable when req.Memory refused what decoding needed; and the
// errors of store.DB.Append.
func (in *Ingester) Ingest(ctx context.Context, req Request) (store.Commit, error) {
	dec, err := DecoderFor(req.ContentType)
	if err != nil {
		return store.Commit{}, err
	}
	batch := store.Batch{IdempotencyKey: req.IdempotencyKey, Bytes: int64(len(req.Body)), Writer: req.Writer}
	if req.IdempotencyKey != "" {
		// Only a keyed request needs its body's hash: it tells a retry from a reuse of the
		// key (store.Batch.RequestHash), at about 0.5 ms of CPU per MiB.
		mediaType, _, _ := mime.ParseMediaType(req.ContentType)
		hash := sha256.New()
		hash.Write([]byte(mediaType))
		hash.Write([]byte{0})
		hash.Write(req.Body)
		batch.RequestHash = hash.Sum(nil)
		c, found, err := in.DB.IdempotentCommit(ctx, req.Table, req.IdempotencyKey, batch.RequestHash)
		if err != nil || found {
			return c, err
		}
	}
	decode := dec.Decode
	if ld, ok := dec.(leasedDecoder); ok && req.Memory != nil {
		l := newLease(req.Memory)
		defer l.release()
		decode = func(body []byte, s *store.Schema) (arrow.RecordBatch, error) { return ld.decodeLeased(body, s, l) }
	}
	info, rec, err := in.table(ctx, req, dec, decode)
	if err != nil {
		return store.Commit{}, err
	}
	for attempt := 0; ; attempt++ {
		batch.Table, batch.TableID, batch.SchemaVersion = info.Name, info.ID, info.Schema.Version
		batch.Record = rec
		if batch.Record == nil {
			if batch.Record, err = decode(req.Body, &info.Schema); err != nil {
				return store.Commit{}, err
			}
		}
		for _, col := range batch.Record.Columns() {
			warmArrays(col)
		}
		c, err := in.DB.Append(ctx, batch)
		if !errors.Is(err, store.ErrSchemaChanged) || attempt > 0 {
			return c, err
		}
		rec = nil
		if info, err = in.DB.Table(req.Table); err != nil {
			return store.Commit{}, err
		}
	}
}

// table returns the target table and, when it created the table, the body already
// decoded (by decode) under the new table's schema.
func (in *Ingester) table(ctx context.Context, req Request, dec Decoder,
	decode func([]byte, *store.Schema) (arrow.RecordBatch, error)) (store.TableInfo, arrow.RecordBatch, error) {
	info, err := in.DB.Table(req.Table)
	if !errors.Is(err, store.ErrTableNotFound) || !req.Create {
		return info, nil, err
	}
	specs, err := dec.Infer(req.Body)
	if err != nil {
		return store.TableInfo{}, nil, err
	}
	schema, err := store.NewSchema(specs)
	if err != nil {
		return store.TableInfo{}, nil, err
	}
	rec, err := decode(req.Body, schema)
	if err != nil {
		return store.TableInfo{}, nil, err
	}
	info, err = in.DB.CreateTable(ctx, req.Table, specs)
	if store.ErrorCode(err) == store.CodeConflict {
		// Created concurrently by another request: use it, decoding again.
		info, err = in.DB.Table(req.Table)
		return info, nil, err
	}
	return info, rec, err
}

// warmArrays computes, once, what arrow-go computes lazily on first use and caches in
// the array: the null count (NullN) and a dictionary's values (Dictionary.Dictionary, in
// every ENUM column at any depth). The published batch is read by several stream encoders
// at once (docs/design.md, "From an ingest request to a subscriber", step 5), which must
// not race on those first calls.
func warmArrays(a arrow.Array) {
	a.NullN()
	switch a := a.(type) {
	case *array.Dictionary:
		a.Dictionary()
	case *array.Map:
		warmArrays(a.Keys())
		warmArrays(a.Items())
	case array.ListLike:
		warmArrays(a.ListValues())
	case *array.Struct:
		for i := 0; i < a.NumField(); i++ {
			warmArrays(a.Field(i))
		}
	case array.Union:
		for i := 0; i < a.NumFields(); i++ {
			warmArrays(a.Field(i))
		}
	}
}
