package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"

	"github.com/google/uuid"
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

// Reasons a cursor does not decode, as sent in refresh-required events (docs/design.md,
// "The cursor"): decoding happens after HTTP 200, so every failure ends the stream with
// refresh-required, never a status code.
const (
	ReasonInvalidCursor  = "invalid_cursor"  // not a cursor at all
	ReasonNumericCursor  = "numeric_cursor"  // a bare number: the old numeric protocol
	ReasonTamperedCursor = "tampered_cursor" // well formed, but the MAC does not match
)

// CursorError is returned by Cursors.Decode; Reason is ReasonInvalidCursor,
// ReasonNumericCursor or ReasonTamperedCursor.
type CursorError struct{ Reason string }

// Error implements error: "unusable cursor: <reason>".
func (e *CursorError) Error() string { return "unusable cursor: " + e.Reason }

// Cursors encodes positions as opaque cursors and decodes them back, authenticating them
// with HMAC-SHA256 (RFC 2104) under a secret key. The store's own is DB.Cursors, keyed by
// the cursor key kept in its catalog; it is safe for concurrent use.
type Cursors struct{ key []byte }

// NewCursors returns a codec keyed by key (any length; the store's key is CursorKeySize
// bytes). Servers use DB.Cursors; this is for a codec with a known key, as in tests.
func NewCursors(key []byte) *Cursors { return &Cursors{key: key} }

// Cursors returns the codec of this database's cursors, keyed by its cursor key, which is
// made at the first Open and kept in the catalog so that cursors stay valid across
// restarts (docs/design.md, "The cursor"). It is nil before Open.
func (db *DB) Cursors() *Cursors { return db.cursors }

// Encode returns the cursor of p: "r1." followed by unpadded base64url (RFC 4648 §5) of
// version, table id, activation id, seq (big-endian) and a MAC truncated to 16 bytes.
// Seq 0 is the position before an activation's first commit (an idle table's baseline);
// every commit's own cursor has seq ≥ 1.
func (c *Cursors) Encode(p Position) string {
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
func (c *Cursors) Decode(s string) (Position, error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return Position{}, &CursorError{Reason: ReasonNumericCursor}
	}
	if len(s) != cursorLen || !strings.HasPrefix(s, CursorPrefix) {
		return Position{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s[len(CursorPrefix):])
	if err != nil || len(raw) != cursorPayloadSize+cursorMACSize || raw[0] != cursorVersion {
		return Position{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	payload, mac := raw[:cursorPayloadSize], raw[cursorPayloadSize:]
	if !hmac.Equal(mac, c.mac(payload)[:cursorMACSize]) {
		return Position{}, &CursorError{Reason: ReasonTamperedCursor}
	}
	var p Position
	p.TableID = int64(binary.BigEndian.Uint64(payload[1:9]))
	p.Activation = uuid.UUID(payload[9:25])
	p.Seq = int64(binary.BigEndian.Uint64(payload[25:33]))
	if p.TableID <= 0 || p.Seq < 0 {
		return Position{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	return p, nil
}

func (c *Cursors) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(cursorMACContext)
	m.Write(payload)
	return m.Sum(nil)
}
