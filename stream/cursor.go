// Package stream is ducktail's in-memory stream hub: subscriptions with bounded queues,
// the cursor codec, replay from the table, framing as Server-Sent Events, NDJSON or JSON
// text sequences, heartbeats, terminal events and the drain on shutdown (DESIGN.md, "The
// stream" and "The cursor"; seeds 000, 001, 002 and 004). It imports no net/http: the api
// package negotiates, then writes the frames a Session hands it.
package stream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
)

// CursorPrefix starts every cursor of version 1.
const CursorPrefix = "r1."

// cursorVersion is the first byte of a version 1 cursor's payload.
const cursorVersion = 1

// cursorMACSize is how many bytes of the HMAC-SHA256 a cursor keeps (128 bits).
const cursorMACSize = 16

// cursorPayloadSize: version (1) + table id (8) + activation (16) + seq (8).
const cursorPayloadSize = 1 + 8 + 16 + 8

// cursorLen is the length of every encoded version 1 cursor.
var cursorLen = len(CursorPrefix) + base64.RawURLEncoding.EncodedLen(cursorPayloadSize+cursorMACSize)

// cursorMACContext separates cursor MACs from any other use of the key.
var cursorMACContext = []byte("ducktail cursor v1\x00")

// Reasons a cursor cannot be used, sent as the reason of refresh-required. DESIGN.md,
// "The cursor": decoding happens after HTTP 200, and every failure ends the stream with
// refresh-required, never a status code.
const (
	ReasonInvalidCursor  = "invalid_cursor"  // not a cursor at all
	ReasonNumericCursor  = "numeric_cursor"  // a bare number: the old numeric protocol
	ReasonTamperedCursor = "tampered_cursor" // well formed, but the MAC does not match
	ReasonForeignCursor  = "foreign_cursor"  // a cursor of another table
	ReasonCursorAhead    = "cursor_ahead"    // past the head of its activation
	ReasonReplayLimit    = "replay_limit"    // replay would exceed max_replay_commits or max_replay_rows
)

// CursorError is returned by DecodeCursor; Reason is one of the Reason* constants.
type CursorError struct{ Reason string }

// Error implements error: "unusable cursor: <reason>".
func (e *CursorError) Error() string { return "unusable cursor: " + e.Reason }

// Codec encodes positions as opaque cursors and decodes them back, authenticating them
// with HMAC-SHA256 (RFC 2104) under the store's cursor key.
type Codec struct{ key []byte }

// NewCodec returns a Codec using key (store.DB.CursorKey).
func NewCodec(key []byte) *Codec { return &Codec{key: key} }

// Encode returns the cursor of p: "r1." followed by unpadded base64url (RFC 4648 §5) of
// version, table id, activation id, seq (big-endian) and a MAC truncated to 16 bytes.
// Seq 0 is the position before an activation's first commit (an idle table's baseline);
// every commit's own cursor has seq ≥ 1.
func (c *Codec) Encode(p store.Position) string {
	buf := make([]byte, cursorPayloadSize, cursorPayloadSize+sha256.Size)
	buf[0] = cursorVersion
	binary.BigEndian.PutUint64(buf[1:9], uint64(p.TableID))
	copy(buf[9:25], p.Activation[:])
	binary.BigEndian.PutUint64(buf[25:33], uint64(p.Seq))
	buf = append(buf, c.mac(buf)[:cursorMACSize]...)
	return CursorPrefix + base64.RawURLEncoding.EncodeToString(buf)
}

// Decode returns the position s encodes. Errors: *CursorError with ReasonNumericCursor for
// a bare decimal number, ReasonInvalidCursor for anything not shaped like a version 1
// cursor, ReasonTamperedCursor when the MAC does not match.
func (c *Codec) Decode(s string) (store.Position, error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return store.Position{}, &CursorError{Reason: ReasonNumericCursor}
	}
	if len(s) != cursorLen || !strings.HasPrefix(s, CursorPrefix) {
		return store.Position{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s[len(CursorPrefix):])
	if err != nil || len(raw) != cursorPayloadSize+cursorMACSize || raw[0] != cursorVersion {
		return store.Position{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	payload, mac := raw[:cursorPayloadSize], raw[cursorPayloadSize:]
	if !hmac.Equal(mac, c.mac(payload)[:cursorMACSize]) {
		return store.Position{}, &CursorError{Reason: ReasonTamperedCursor}
	}
	var p store.Position
	p.TableID = int64(binary.BigEndian.Uint64(payload[1:9]))
	p.Activation = uuid.UUID(payload[9:25])
	p.Seq = int64(binary.BigEndian.Uint64(payload[25:33]))
	if p.TableID <= 0 || p.Seq < 0 {
		return store.Position{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	return p, nil
}

func (c *Codec) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(cursorMACContext)
	m.Write(payload)
	return m.Sum(nil)
}

// MaxLastEventIDLen is the longest Last-Event-ID header accepted, in bytes.
const MaxLastEventIDLen = 512

// ErrBadLastEventID is returned by CheckLastEventID: the header is not framed correctly,
// which refuses the stream before it starts (docs/design.md, "The cursor").
var ErrBadLastEventID = errors.New("Last-Event-ID header is longer than 512 bytes or holds control characters")

// CheckLastEventID checks the framing of a Last-Event-ID (or ?cursor=) value: at most
// MaxLastEventIDLen bytes, valid UTF-8, no control characters (the WHATWG SSE id field
// cannot carry CR, LF or NUL). Whether it is a usable cursor is decided after HTTP 200.
func CheckLastEventID(s string) error {
	if len(s) > MaxLastEventIDLen {
		return ErrBadLastEventID
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return ErrBadLastEventID
		}
	}
	return nil
}
