package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ducktail/ducktail/ingest"
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

// ingest: POST /v1/tables/{table}/rows commits the body as one commit (docs/design.md,
// "Ingest"): all rows or none, through ingest.Ingester. The body's media type picks the
// decoder. ?create=true creates a missing table from the body's inferred schema.
// Idempotency-Key makes a retry answer the first commit (200, Idempotent-Replayed: true)
// instead of committing again. Answers 201 with ingestResponse; 400/422 naming row and
// column; 404 unknown table; 409 key reused with another body; 413 body too large; 415
// unsupported media type.
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
	// An unsupported media type is refused before the body is read.
	if _, err := ingest.DecoderFor(contentType); err != nil {
		s.ingestFailed(w, r, err)
		return
	}
	body, release, err := readBody(w, r, s.cfg.MaxBodyBytes, s.ingestMemory)
	defer release()
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		s.ingestFailed(w, r, &store.Error{Code: store.CodeTooLarge, Message: fmt.Sprintf("request body is over the limit of %d bytes; send smaller commits", tooBig.Limit)})
		return
	}
	if store.ErrorCode(err) == store.CodeUnavailable {
		s.ingestFailed(w, r, err)
		return
	}
	if err != nil {
		s.ingestFailed(w, r, &store.Error{Code: store.CodeInvalid, Message: "reading the request body failed: " + err.Error()})
		return
	}
	in := ingest.Ingester{DB: s.db}
	c, err := in.Ingest(r.Context(), ingest.Request{Table: name, ContentType: contentType, Body: body,
		IdempotencyKey: key, Create: r.URL.Query().Get("create") == "true", Memory: s.ingestMemory, Writer: r.RemoteAddr})
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

func (s *Server) ingestFailed(w http.ResponseWriter, r *http.Request, err error) {
	s.metrics.ingestRejects.WithLabelValues(string(store.ErrorCode(err))).Inc()
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
