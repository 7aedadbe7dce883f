package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strings"
	"sync"

	"github.com/google/uuid"
)

// CursorPrefix starts every cursor of version 1, the cursor of a position read without a
// shape.
const CursorPrefix = "r1."

// ShapedCursorPrefix starts every cursor of version 2: a position read through a shape,
// bound to that shape by its tag (docs/design.md, "Shapes and policies").
const ShapedCursorPrefix = "r2."

// cursorVersion is the first byte of a version 1 cursor's payload; shapedCursorVersion
// that of a version 2 cursor.
const (
	cursorVersion       = 1
	shapedCursorVersion = 2
)

// cursorMACSize is how many bytes of the HMAC-SHA256 a cursor keeps (128 bits).
const cursorMACSize = 16

// cursorPayloadSize: version (1) + table id (8) + activation (16) + seq (8).
const cursorPayloadSize = 1 + 8 + 16 + 8

// cursorLen is the length of every encoded version 1 cursor, shapedCursorLen that of a
// version 2 cursor, whose payload adds the shape tag.
var (
	cursorLen       = len(CursorPrefix) + base64.RawURLEncoding.EncodedLen(cursorPayloadSize+cursorMACSize)
	shapedCursorLen = len(ShapedCursorPrefix) + base64.RawURLEncoding.EncodedLen(cursorPayloadSize+ShapeTagSize+cursorMACSize)
)

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
type Cursors struct {
	key  []byte
	macs sync.Pool // of HMAC-SHA256 states keyed by key, reset before use
}

// NewCursors returns a codec keyed by key (any length; the store's key is CursorKeySize
// bytes). Servers use DB.Cursors; this is for a codec with a known key, as in tests.
func NewCursors(key []byte) *Cursors {
	c := &Cursors{key: key}
	c.macs.New = func() any { return hmac.New(sha256.New, key) }
	return c
}

// Key returns the codec's key. A writer shares it with its stream nodes (package
// jetstream), which must encode the same cursors; anyone holding it can forge cursors
// of any position, so it travels only to them.
func (c *Cursors) Key() []byte { return c.key }

// Cursors returns the codec of this database's cursors, keyed by its cursor key, which is
// made at the first Open and kept in the catalog so that cursors stay valid across
// restarts (docs/design.md, "The cursor"). It is nil before Open.
func (db *DB) Cursors() *Cursors { return db.cursors }

// Encode returns the cursor of p: "r1." followed by unpadded base64url (RFC 4648 §5) of
// version, table id, activation id, seq (big-endian) and a MAC truncated to 16 bytes.
// Seq 0 is the position before an activation's first commit (an idle table's baseline);
// every commit's own cursor has seq ≥ 1.
func (c *Cursors) Encode(p Position) string { return c.EncodeShaped(p, ShapeTag{}) }

// EncodeShaped returns the cursor of p read through the shape whose tag is tag
// (Shape.Tag): for the zero tag (no shape) the version 1 cursor Encode returns, else
// "r2." and the same payload followed by the tag, all under the MAC, so that a cursor is
// bound to its shape and the binding cannot be forged.
func (c *Cursors) EncodeShaped(p Position, tag ShapeTag) string {
	prefix, version, size := CursorPrefix, byte(cursorVersion), cursorPayloadSize
	if tag != (ShapeTag{}) {
		prefix, version, size = ShapedCursorPrefix, shapedCursorVersion, cursorPayloadSize+ShapeTagSize
	}
	buf := make([]byte, size, size+sha256.Size)
	buf[0] = version
	binary.BigEndian.PutUint64(buf[1:9], uint64(p.TableID))
	copy(buf[9:25], p.Activation[:])
	binary.BigEndian.PutUint64(buf[25:33], uint64(p.Seq))
	copy(buf[cursorPayloadSize:], tag[:])
	buf = c.mac(buf)[:size+cursorMACSize]
	return prefix + base64.RawURLEncoding.EncodeToString(buf)
}

// Decode returns the position s encodes, a cursor of either version; DecodeShaped also
// returns the shape it is bound to. Errors: as DecodeShaped's.
func (c *Cursors) Decode(s string) (Position, error) {
	p, _, err := c.DecodeShaped(s)
	return p, err
}

// DecodeShaped returns the position s encodes and the tag of the shape it was read
// through (the zero tag for a version 1 cursor). Errors: *CursorError with
// ReasonNumericCursor for a bare decimal number, ReasonInvalidCursor for anything not
// shaped like a cursor of version 1 or 2, ReasonTamperedCursor when the MAC does not
// match.
func (c *Cursors) DecodeShaped(s string) (Position, ShapeTag, error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return Position{}, ShapeTag{}, &CursorError{Reason: ReasonNumericCursor}
	}
	prefix, version, size := CursorPrefix, byte(cursorVersion), cursorPayloadSize
	if strings.HasPrefix(s, ShapedCursorPrefix) {
		prefix, version, size = ShapedCursorPrefix, shapedCursorVersion, cursorPayloadSize+ShapeTagSize
		if len(s) != shapedCursorLen {
			return Position{}, ShapeTag{}, &CursorError{Reason: ReasonInvalidCursor}
		}
	} else if len(s) != cursorLen || !strings.HasPrefix(s, CursorPrefix) {
		return Position{}, ShapeTag{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s[len(prefix):])
	if err != nil || len(raw) != size+cursorMACSize || raw[0] != version {
		return Position{}, ShapeTag{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	payload, mac := raw[:size], raw[size:]
	var sum [cursorPayloadSize + ShapeTagSize + sha256.Size]byte
	if !hmac.Equal(mac, c.mac(append(sum[:0], payload...))[size:size+cursorMACSize]) {
		return Position{}, ShapeTag{}, &CursorError{Reason: ReasonTamperedCursor}
	}
	var tag ShapeTag
	copy(tag[:], payload[cursorPayloadSize:])
	var p Position
	p.TableID = int64(binary.BigEndian.Uint64(payload[1:9]))
	p.Activation = uuid.UUID(payload[9:25])
	p.Seq = int64(binary.BigEndian.Uint64(payload[25:33]))
	if p.TableID <= 0 || p.Seq < 0 {
		return Position{}, ShapeTag{}, &CursorError{Reason: ReasonInvalidCursor}
	}
	return p, tag, nil
}

// mac returns payload appended with its MAC (the whole HMAC-SHA256, before truncation).
func (c *Cursors) mac(payload []byte) []byte {
	m := c.macs.Get().(hash.Hash)
	defer c.macs.Put(m)
	m.Reset()
	m.Write(cursorMACContext)
	m.Write(payload)
	return m.Sum(payload)
}
