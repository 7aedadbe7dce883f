package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// streamByBearer: GET /v1/tables/{table}/stream with Authorization: Bearer.
func (s *Server) streamByBearer(w http.ResponseWriter, r *http.Request) {
	s.serveStream(w, r, tokenFrom(r), pathParam(r, "table"))
}

// refuseStream answers a stream request that cannot start, counting it by reason.
func (s *Server) refuseStream(w http.ResponseWriter, r *http.Request, reason string, err error) {
	s.metrics.streamRefusals.WithLabelValues(reason).Inc()
	s.writeError(w, r, err)
}

// streamByPathToken: GET /stream/{token}, the token in the path for the browser's
// EventSource, which cannot set headers. Only stream tokens are accepted here, never an
// admin token, because paths end up in browser histories and proxy logs. The table is the
// token's own; a token scoped to no table names it with ?table=.
func (s *Server) streamByPathToken(w http.ResponseWriter, r *http.Request) {
	tok, err := s.checkToken(w, pathParam(r, "token"))
	if err != nil {
		s.refuseStream(w, r, "token", err)
		return
	}
	if tok.Purpose != store.PurposeStream {
		s.refuseStream(w, r, "scope", &store.Error{Code: store.CodeForbidden, Message: "only stream tokens may be put in a URL; send other tokens in Authorization: Bearer"})
		return
	}
	table := tok.Table
	if table == "" {
		table = r.URL.Query().Get("table")
	}
	if table == "" {
		s.refuseStream(w, r, "table", &store.Error{Code: store.CodeInvalid, Field: "table", Message: "this token is not limited to a table; name one with ?table="})
		return
	}
	s.serveStream(w, r, tok, table)
}

// streamShape compiles a stream's shape: with the snapshot reader on the writer; on a
// stream node with its shape engine, against the table as its source has it
// (snapshot.CompileShape). Errors: snapshot.Reader.Shape's, and the source's.
func (s *Server) streamShape(r *http.Request, table string, spec snapshot.ShapeSpec, policy store.TokenPolicy) (*store.Shape, error) {
	if s.reader != nil {
		return s.reader.Shape(r.Context(), table, spec, policy)
	}
	if spec.Where == "" && spec.Columns == nil && policy.Empty() {
		return nil, nil
	}
	info, err := s.hub.Source.Table(table)
	if err != nil {
		return nil, err
	}
	return snapshot.CompileShape(r.Context(), s.shapes, info, spec, policy)
}

// serveStream checks everything that can fail before the stream starts (origin, purpose
// and scope, Last-Event-ID framing, encoding, table, admission), answering those with a
// 4xx or 503, then sends 200 and writes the session's frames until a terminal event, the
// client leaving, or a write missing its deadline (docs/design.md, "The stream"). After 200
// the status never changes.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, tok store.Token, table string) {
	if !s.originAllowed(r) {
		s.refuseStream(w, r, "origin", &store.Error{Code: store.CodeForbidden, Message: "origin " + strconv.Quote(r.Header.Get("Origin")) + " is not allowed"})
		return
	}
	if err := allow(tok, store.PurposeStream, table); err != nil {
		s.refuseStream(w, r, "scope", err)
		return
	}
	cursor := r.Header.Get("Last-Event-ID")
	if cursor == "" {
		cursor = r.URL.Query().Get("cursor")
	}
	if err := stream.CheckLastEventID(cursor); err != nil {
		s.refuseStream(w, r, "last_event_id", &store.Error{Code: store.CodeInvalid, Field: "Last-Event-ID", Message: err.Error()})
		return
	}
	encoding, err := stream.ParseEncoding(r.URL.Query().Get("encoding"))
	if err != nil {
		s.refuseStream(w, r, "encoding", &store.Error{Code: store.CodeInvalid, Field: "encoding", Message: err.Error()})
		return
	}
	spec, err := shapeSpec(r)
	if err != nil {
		s.refuseStream(w, r, "shape", err)
		return
	}
	// The shape is checked and compiled before the stream starts: a bad predicate is a
	// 400 (docs/design.md, "Shapes and policies").
	shape, err := s.streamShape(r, table, spec, policyOn(tok, table))
	if s.proxy != nil && errors.Is(err, stream.ErrWriterOnly) {
		s.proxy.ServeHTTP(w, r)
		return
	}
	if err != nil {
		s.refuseStream(w, r, string(store.ErrorCode(err)), err)
		return
	}
	framing := negotiateFraming(r.Header.Get("Accept"))
	sess, err := s.hub.Subscribe(stream.SubscribeRequest{Table: table, Token: tok, Framing: framing, Encoding: encoding, Cursor: cursor, Shape: shape})
	if s.proxy != nil && errors.Is(err, stream.ErrWriterOnly) {
		s.proxy.ServeHTTP(w, r)
		return
	}
	if err != nil {
		s.refuseStream(w, r, string(store.ErrorCode(err)), err)
		return
	}
	defer sess.Close()

	rc := http.NewResponseController(w)
	wd := &writeDeadline{s: s, rc: rc}
	h := w.Header()
	h.Set("Content-Type", framing.ContentType())
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	if r.ProtoMajor == 1 {
		// No chunked encoding: the body ends when the connection closes, as a stream does
		// anyway (RFC 9112 §6.3), and each frame is one write instead of three.
		h.Set("Transfer-Encoding", "identity")
	}
	wd.extend()
	w.WriteHeader(http.StatusOK)
	s.metrics.streamsActive.Inc()
	defer s.metrics.streamsActive.Dec()
	if _, err := w.Write(stream.Preamble(framing, s.hub.RetryMS())); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	var replayed int
	var frames []stream.Frame // the frames of one write, its array reused
	if cursor != "" {
		defer func() { s.metrics.replayCommits.Observe(float64(replayed)) }()
	}
	for {
		f, err := sess.Next(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				s.log.Error("stream ended", "table", table, "err", err)
			}
			return
		}
		// Small frames that are ready together go out in one write, joined in a buffer
		// borrowed for that write only; a large frame goes out as it is, the bytes shared
		// with the other subscribers.
		out := f.Bytes
		frames = append(frames[:0], f)
		var buf *[]byte
		if sess.Buffered() && !f.Terminal && len(f.Bytes) < maxCoalescedWrite {
			buf = coalesceBuffers.Get().(*[]byte)
			*buf = append((*buf)[:0], f.Bytes...)
			for sess.Buffered() && len(*buf) < maxCoalescedWrite && !f.Terminal {
				if f, err = sess.Next(ctx); err != nil {
					break
				}
				*buf = append(*buf, f.Bytes...)
				frames = append(frames, f)
			}
			out = *buf
		}
		wd.extend()
		_, err = w.Write(out)
		if err == nil {
			err = rc.Flush()
		}
		if buf != nil && cap(*buf) <= 2*maxCoalescedWrite {
			coalesceBuffers.Put(buf)
		}
		s.metrics.observeWrite(frames)
		for _, f := range frames {
			if f.Commit.Replayed {
				replayed++
			}
		}
		if err != nil || frames[len(frames)-1].Terminal {
			return
		}
		clear(frames) // holds no frame's bytes while the stream waits
	}
}

// maxCoalescedWrite bounds the bytes of frames joined into one write: with small frames
// one write carries dozens, and a stream whose write blocks holds at most about this much
// besides the shared frames.
const maxCoalescedWrite = 64 << 10

// coalesceBuffers holds the buffers frames are joined in, shared by every stream: a
// stream holds one only while it writes, so idle streams hold none.
var coalesceBuffers = sync.Pool{New: func() any { b := make([]byte, 0, maxCoalescedWrite); return &b }}

// writeDeadline keeps a stream's write deadline StreamWriteTimeout ahead, replacing the
// server-wide WriteTimeout for this response: a consumer that cannot take a frame for that
// long is cut. It moves the deadline only once half of it has passed, so a write waits at
// most between half and all of StreamWriteTimeout, without a deadline update per frame.
type writeDeadline struct {
	s  *Server
	rc *http.ResponseController
	at time.Time
}

func (d *writeDeadline) extend() {
	now := time.Now()
	if d.at.Sub(now) > d.s.cfg.StreamWriteTimeout/2 {
		return
	}
	d.at = now.Add(d.s.cfg.StreamWriteTimeout)
	if err := d.rc.SetWriteDeadline(d.at); err != nil && !errors.Is(err, http.ErrNotSupported) {
		d.s.log.Debug("set write deadline", "err", err)
	}
}

// negotiateFraming picks the framing from an Accept header: the supported media type with
// the highest q-value (RFC 9110 §12.5.1), text/event-stream when none is named.
func negotiateFraming(accept string) stream.Framing {
	best, bestQ := stream.FramingSSE, 0.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		var f stream.Framing
		switch mt {
		case "text/event-stream":
			f = stream.FramingSSE
		case "application/x-ndjson", "application/jsonl":
			f = stream.FramingNDJSON
		case "application/json-seq":
			f = stream.FramingJSONSeq
		default:
			continue
		}
		if q > bestQ {
			best, bestQ = f, q
		}
	}
	return best
}
