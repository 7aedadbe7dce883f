package stream

import "errors"

// Reasons a stream ends with refresh-required besides an undecodable cursor
// (store.ReasonInvalidCursor, store.ReasonNumericCursor, store.ReasonTamperedCursor) and
// an ended activation (store.ReasonTableReset, store.ReasonTableDropped).
const (
	ReasonForeignCursor = "foreign_cursor" // a cursor of another table
	ReasonCursorAhead   = "cursor_ahead"   // past the head of its activation
	ReasonReplayLimit   = "replay_limit"   // replay would exceed max_replay_commits or max_replay_rows
)

// Reasons a stream ends with reconnect because of its source (a stream node's JetStream),
// to be resumed with the same cursor.
const (
	// ReasonSourceUnavailable: the source did not answer a read (Source.Read,
	// Source.Table with store.CodeUnavailable).
	ReasonSourceUnavailable = "source_unavailable"
	// ReasonSourceBehind: the cursor names a commit the source has not received after
	// Source.AwaitHead's wait (a stream node behind the writer).
	ReasonSourceBehind = "source_behind"
)

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
