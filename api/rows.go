package api

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
)

// MaxIdempotencyKeyLen is the longest Idempotency-Key header accepted, in bytes.
const MaxIdempotencyKeyLen = 255

// ingestResponse is the answer to POST /v1/tables/{table}/rows: the committed rows and
// the cursor of the commit, the same cursor its batch event carries.
type ingestResponse struct {
	Table  string `json:"table"`
	Rows   int64  `json:"rows"`
	Seq    int64  `json:"seq"`
	Cursor string `json:"cursor"`
}

// ingest: POST /v1/tables/{table}/rows commits the body as one commit (DESIGN.md,
// "Ingest"): all rows or none. The body's media type picks the decoder. ?create=true
// creates a missing table from the body's inferred schema. Idempotency-Key makes a retry
// answer the first commit (200, Idempotent-Replayed: true) instead of committing again.
// Answers 201 with ingestResponse; 400/422 naming row and column; 404 unknown table;
// 409 key reused with another body; 413 body too large; 415 unsupported media type.
func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name := pathParam(r, "table")
	if err := allow(tokenFrom(r), store.PurposeIngest, name); err != nil {
		s.ingestFailed(w, r, err)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if len(key) > MaxIdempotencyKeyLen || !printableASCII(key) {
		s.ingestFailed(w, r, &store.Error{Code: store.CodeInvalid, Field: "Idempotency-Key", Message: fmt.Sprintf("Idempotency-Key must be at most %d printable ASCII characters", MaxIdempotencyKeyLen)})
		return
	}
	contentType := r.Header.Get("Content-Type")
	dec, err := decoderFor(contentType)
	if err != nil {
		s.ingestFailed(w, r, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		s.ingestFailed(w, r, &store.Error{Code: store.CodeTooLarge, Message: fmt.Sprintf("request body is over the limit of %d bytes; send smaller commits", tooBig.Limit)})
		return
	}
	if err != nil {
		s.ingestFailed(w, r, &store.Error{Code: store.CodeInvalid, Message: "reading the request body failed: " + err.Error()})
		return
	}
	mediaType, _, _ := mime.ParseMediaType(contentType)
	hash := sha256.New()
	hash.Write([]byte(mediaType))
	hash.Write([]byte{0})
	hash.Write(body)
	batch := store.Batch{IdempotencyKey: key, RequestHash: hash.Sum(nil), Bytes: int64(len(body))}
	var c store.Commit
	if key != "" {
		// A retry is answered from the commit log before its body is decoded: the
		// table's columns may have changed since the first request.
		var found bool
		if c, found, err = s.db.IdempotentCommit(r.Context(), name, key, batch.RequestHash); err != nil || found {
			if err != nil {
				s.ingestFailed(w, r, err)
			} else {
				s.ingested(w, c, time.Since(start))
			}
			return
		}
	}
	info, rec, err := s.tableForIngest(r, name, dec, body)
	if err != nil {
		s.ingestFailed(w, r, err)
		return
	}
	// A schema change between decoding and committing is retried once with the new schema.
	for attempt := 0; ; attempt++ {
		batch.Table, batch.TableID, batch.SchemaVersion = info.Name, info.ID, info.Schema.Version
		batch.Record = rec
		if batch.Record == nil {
			if batch.Record, err = dec.Decode(body, &info.Schema); err != nil {
				s.ingestFailed(w, r, err)
				return
			}
		}
		c, err = s.db.Append(r.Context(), batch)
		if !errors.Is(err, store.ErrSchemaChanged) || attempt > 0 {
			break
		}
		rec = nil
		if info, err = s.db.Table(name); err != nil {
			break
		}
	}
	if err != nil {
		s.ingestFailed(w, r, err)
		return
	}
	s.ingested(w, c, time.Since(start))
}

// ingested answers a commit: 201, or 200 with Idempotent-Replayed for a retry.
func (s *Server) ingested(w http.ResponseWriter, c store.Commit, took time.Duration) {
	status := http.StatusCreated
	if c.Duplicate {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	} else {
		s.metrics.ingestCommits.Inc()
		s.metrics.ingestRows.Add(float64(c.Rows))
		s.metrics.ingestBytes.Add(float64(c.Bytes))
		s.metrics.ingestDuration.Observe(took.Seconds())
	}
	writeJSON(w, status, ingestResponse{Table: c.TableName, Rows: c.Rows, Seq: c.Position.Seq, Cursor: s.codec.Encode(c.Position)})
}

// tableForIngest returns the target table and, when it created the table, the body
// already decoded. A missing table is created from the body's inferred schema when
// ?create=true, and only once the body decodes under that schema, so that a refused body
// leaves no table behind.
func (s *Server) tableForIngest(r *http.Request, name string, dec rowDecoder, body []byte) (store.TableInfo, arrow.RecordBatch, error) {
	info, err := s.db.Table(name)
	if !errors.Is(err, store.ErrTableNotFound) || r.URL.Query().Get("create") != "true" {
		return info, nil, err
	}
	specs, err := dec.Infer(body)
	if err != nil {
		return store.TableInfo{}, nil, err
	}
	schema, err := store.NewSchema(specs)
	if err != nil {
		return store.TableInfo{}, nil, err
	}
	rec, err := dec.Decode(body, schema)
	if err != nil {
		return store.TableInfo{}, nil, err
	}
	info, err = s.db.CreateTable(r.Context(), name, specs)
	if store.ErrorCode(err) == store.CodeConflict {
		// Created concurrently by another request: use it, decoding again.
		info, err = s.db.Table(name)
		return info, nil, err
	}
	return info, rec, err
}

func (s *Server) ingestFailed(w http.ResponseWriter, r *http.Request, err error) {
	reason := string(store.ErrorCode(err))
	var ae *apiError
	if errors.As(err, &ae) {
		reason = ae.code
	}
	s.metrics.ingestRejects.WithLabelValues(reason).Inc()
	s.writeError(w, r, err)
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
