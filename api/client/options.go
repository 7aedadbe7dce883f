package client

import (
	"net/http"
	"time"
)

// Defaults for Options fields left zero.
const (
	// DefaultHeartbeatInterval is the server's default heartbeat interval (docs/design.md,
	// "The stream"; every 15 seconds when idle).
	DefaultHeartbeatInterval = 15 * time.Second
	// DefaultHeartbeatMargin is the silence tolerated past the heartbeat interval before
	// a connection is taken for dead.
	DefaultHeartbeatMargin = 10 * time.Second
	// DefaultMinBackoff is the ceiling of the first reconnect delay; each further attempt
	// doubles it (with full jitter) up to DefaultMaxBackoff.
	DefaultMinBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff caps the reconnect delay (docs/design.md, "Shutdown": capped at 30 s).
	DefaultMaxBackoff = 30 * time.Second
	// DefaultStableAfter is how long a connection must hold, when it delivered no batch,
	// before the backoff schedule starts again from DefaultMinBackoff.
	DefaultStableAfter = 30 * time.Second
	// DefaultMaxEventBytes bounds one event as read from the wire: 1 GiB, above the
	// base64 of the largest commit the server's default 256 MiB ingest limit allows.
	DefaultMaxEventBytes = 1 << 30
)

// Options configure Stream (and, embedded in LiveOptions, LiveQuery). The zero value of
// every field but the handlers means its default.
type Options struct {
	// Table is the table to stream. When set, the stream is
	// GET {baseURL}/v1/tables/{Table}/stream with the token in Authorization: Bearer;
	// when "", GET {baseURL}/stream/{token}, the table the token is scoped to. LiveQuery
	// needs it.
	Table string
	// Cursor is where to start: "" starts a new subscription after the rows visible when
	// it opens (no backfill); a cursor from an earlier batch, schema or snapshot resumes
	// exactly after it (docs/design.md, "Start position").
	Cursor string
	// Shape is what the stream carries of the table: the rows its predicate matches,
	// with its columns; the zero Shape is every row and column. A cursor belongs to the
	// shape it was read through: resuming it with another shape is refresh-required
	// (reason shape_mismatch), so LiveQuery's snapshots are read through the same shape.
	Shape Shape
	// Framing is the framing asked for in Accept; FramingSSE when "".
	Framing Framing
	// HTTPClient sends the requests. Its Timeout must be 0, since a stream has no end;
	// silence is caught by the heartbeat watchdog instead. When nil, the client is
	// NewHTTPClient(CAFile), or http.DefaultClient when there is no CA file to trust.
	HTTPClient *http.Client
	// CAFile is a PEM file of certificates to trust besides the system's, for a server
	// with a self-signed or private certificate; used only when HTTPClient is nil. ""
	// means DefaultCAFile (data/tls/cert.pem, relative to the working directory) for an
	// https:// URL when that file exists, else none. A file that cannot be read, or holds
	// no PEM certificate, is an error of Stream and LiveQuery.
	CAFile string

	// OnSchema is called with each schema event. Returning nil acknowledges its cursor;
	// an error or a panic ends the stream with a *HandlerError. Nil acknowledges at once.
	OnSchema func(SchemaChange) error
	// OnBatch is called with each batch, in commit order. Returning nil acknowledges it:
	// its cursor becomes the one a reconnect resumes from (docs/design.md, "Recovery": a delivered event is
	// not a processed one). An error or a panic ends the stream with a *HandlerError and
	// the batch stays unacknowledged. Nil acknowledges at once.
	OnBatch func(Batch) error
	// OnStatus is called on every change of Status, on the consumer's goroutine. A panic
	// ends the stream with a *HandlerError.
	OnStatus func(Status)
	// OnError is called with every error the consumer recovers from before it retries:
	// a refusal it retries (*StatusError), a reconnect request (*ReconnectError), an
	// abrupt close (wrapping ErrAbruptClose), silence (wrapping ErrSilence), a network or
	// decoding error, and in LiveQuery the *RefreshRequiredError it refreshes from. A
	// panic ends the stream with a *HandlerError.
	OnError func(error)

	// HeartbeatInterval is the server's heartbeat interval (its --heartbeat-interval).
	// A connection silent for HeartbeatInterval+HeartbeatMargin is closed and replaced
	// (ErrSilence). Defaults: DefaultHeartbeatInterval, DefaultHeartbeatMargin.
	HeartbeatInterval time.Duration
	HeartbeatMargin   time.Duration
	// MinBackoff and MaxBackoff shape the reconnect delays: attempt n waits a random
	// time in [0, min(MaxBackoff, MinBackoff·2ⁿ)], added to the server's SSE retry field
	// or Retry-After when it sent one. Defaults: DefaultMinBackoff, DefaultMaxBackoff.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// StableAfter: a connection held this long, or one that delivered a batch, resets
	// the backoff schedule. Default: DefaultStableAfter.
	StableAfter time.Duration
	// MaxEventBytes bounds one event on the wire; a longer one ends the stream with
	// ErrEventTooLarge. Default: DefaultMaxEventBytes.
	MaxEventBytes int
}

// withDefaults returns o with its zero fields defaulted.
func (o Options) withDefaults() Options {
	if o.Framing == "" {
		o.Framing = FramingSSE
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.HeartbeatMargin <= 0 {
		o.HeartbeatMargin = DefaultHeartbeatMargin
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.StableAfter <= 0 {
		o.StableAfter = DefaultStableAfter
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = DefaultMaxEventBytes
	}
	return o
}
