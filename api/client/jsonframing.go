package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// recordSeparator starts every record of application/json-seq (RFC 7464 §2).
const recordSeparator = 0x1e

// jsonReader reads the JSON framings: application/x-ndjson, where a record is one line
// ended by LF (a trailing CR is JSON whitespace, so CRLF works too), and application/
// json-seq (RFC 7464), where a record starts with RS. Only a complete record is trusted
// (docs/design.md, "Framing"): an NDJSON line without its LF at the end of input is a truncation
// and is dropped; a JSON-seq record is complete at the LF that makes it valid JSON, or at
// the next RS when it is valid then, and one that is still not valid JSON at the next RS
// was truncated and is skipped, as RFC 7464 §2.3 asks.
type jsonReader struct {
	r   *bufio.Reader
	max int
	seq bool

	rec    []byte
	inside bool // json-seq: an RS was read and its record is not yet returned
}

// jsonRecord is one event in the JSON framings: {"event":…,"id":…,"data":…}.
type jsonRecord struct {
	Event string          `json:"event"`
	ID    string          `json:"id"`
	Data  json.RawMessage `json:"data"`
}

func (j *jsonReader) reconnectionTime() (time.Duration, bool) { return 0, false }

// next returns the next event. Errors: io.EOF at the end of input, io.ErrUnexpectedEOF
// when it ends inside a record, ErrEventTooLarge, a malformed NDJSON record, or the
// body's read error.
func (j *jsonReader) next() (wireEvent, error) {
	for {
		var rec []byte
		var err error
		if j.seq {
			rec, err = j.seqRecord()
		} else {
			rec, err = j.line()
		}
		if err != nil {
			return wireEvent{}, err
		}
		if len(bytes.TrimSpace(rec)) == 0 {
			continue
		}
		var m jsonRecord
		if err := json.Unmarshal(rec, &m); err != nil {
			return wireEvent{}, fmt.Errorf("malformed stream record: %w", err)
		}
		data := []byte(m.Data)
		if len(data) > 0 && data[0] == '"' {
			var s string
			if err := json.Unmarshal(data, &s); err != nil {
				return wireEvent{}, fmt.Errorf("malformed stream record data: %w", err)
			}
			data = []byte(s)
		}
		return wireEvent{name: m.Event, id: m.ID, data: data}, nil
	}
}

// line reads one NDJSON record through its LF.
func (j *jsonReader) line() ([]byte, error) {
	j.rec = j.rec[:0]
	for {
		chunk, err := j.r.ReadSlice('\n')
		j.rec = append(j.rec, chunk...)
		if len(j.rec) > j.max {
			return nil, ErrEventTooLarge
		}
		switch err {
		case nil:
			return j.rec, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(j.rec) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
		}
		return nil, err
	}
}

// seqRecord reads one JSON-seq record, without its RS.
func (j *jsonReader) seqRecord() ([]byte, error) {
	for {
		if _, err := j.r.Peek(1); err != nil {
			if err == io.EOF && j.inside && len(bytes.TrimSpace(j.rec)) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf, _ := j.r.Peek(j.r.Buffered())
		i := indexDelim(buf, recordSeparator, '\n')
		if i < 0 {
			if j.inside {
				j.rec = append(j.rec, buf...)
			}
			j.r.Discard(len(buf))
			if len(j.rec) > j.max {
				return nil, ErrEventTooLarge
			}
			continue
		}
		delim := buf[i]
		if j.inside {
			j.rec = append(j.rec, buf[:i]...)
		}
		j.r.Discard(i + 1)
		if len(j.rec) > j.max {
			return nil, ErrEventTooLarge
		}
		if delim == recordSeparator {
			// The next record starts. The current one, if any, ends here: it is taken
			// when it is valid JSON (an object cannot be truncated and stay valid) and
			// skipped otherwise.
			done := j.inside && json.Valid(j.rec)
			rec := j.rec
			j.rec, j.inside = nil, true
			if done {
				return rec, nil
			}
			continue
		}
		if j.inside && json.Valid(j.rec) {
			rec := j.rec
			j.rec, j.inside = j.rec[:0:0], false
			return rec, nil
		}
		if j.inside {
			j.rec = append(j.rec, '\n')
		}
	}
}
