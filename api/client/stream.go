package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"
)

// Stream subscribes to a table's commits and hands them to opts' handlers, one at a time
// and in commit order, until ctx ends or the stream cannot go on. It reconnects on its
// own: after an abrupt close or silence (with backoff and full jitter, never sooner than
// the server's SSE retry field), after a reconnect event (after its retry_ms), and after
// a 408, 429 or 5xx refusal (after its Retry-After, plus backoff), each time resuming with
// Last-Event-ID set to the last cursor a handler acknowledged (docs/design.md, "Recovery").
//
// It returns only when it stops, never nil:
//   - ctx's error when ctx ends;
//   - *RefreshRequiredError: the cursor cannot be continued (LiveQuery recovers from it);
//   - *FailureError: the stream failed after it started (token revoked or expired,
//     internal error);
//   - *StatusError: a refusal that retrying cannot fix (400, 401, 403, 404, other 4xx);
//   - *HandlerError: a handler returned an error or panicked;
//   - ErrEventTooLarge;
//   - an error wrapping ErrUntrustedCertificate: the server's TLS certificate did not
//     verify (see Options.CAFile);
//   - an error naming a malformed baseURL, an opts.Cursor with a control character, or
//     an opts.CAFile that cannot be read.
//
// baseURL is the server's root ("https://localhost:8443"); token is a token of purpose
// stream (or admin) allowed to read the table.
func Stream(ctx context.Context, baseURL, token string, opts Options) error {
	c, err := newConsumer(baseURL, token, opts)
	if err != nil {
		return err
	}
	return c.run(ctx, nil, false)
}

// consumer is the state of one Stream or LiveQuery: it is used by one goroutine, the
// caller's, and starts none of its own (the watchdog's timer function only cancels).
type consumer struct {
	opts    Options
	base    *url.URL
	token   string
	silence time.Duration
	backoff *backoff
	status  Status
	// cursor is the last cursor a handler acknowledged: the Last-Event-ID of the next
	// connection.
	cursor string
	// retry is the server's SSE reconnection time, the floor of reconnect delays.
	retry time.Duration
	// trusted says which certificates verify the server's, for ErrUntrustedCertificate.
	trusted string
}

func newConsumer(baseURL, token string, opts Options) (*consumer, error) {
	base, err := url.Parse(baseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("base URL %q: want an http:// or https:// URL", baseURL)
	}
	for _, r := range opts.Cursor {
		// Sent as Last-Event-ID: the server refuses control characters (docs/design.md, "The
		// cursor") and Go's HTTP client cannot send CR, LF or NUL in a header.
		if r < 0x20 || r == 0x7f {
			return nil, fmt.Errorf("cursor %q holds a control character", opts.Cursor)
		}
	}
	opts = opts.withDefaults()
	hc, trusted, err := httpClient(base.Scheme, opts)
	if err != nil {
		return nil, err
	}
	opts.HTTPClient = hc
	return &consumer{
		opts: opts, base: base, token: token, cursor: opts.Cursor, trusted: trusted,
		silence: opts.HeartbeatInterval + opts.HeartbeatMargin,
		backoff: newBackoff(opts.MinBackoff, opts.MaxBackoff),
	}, nil
}

// refresher rebuilds a consumer's state from a snapshot and sets its cursor; LiveQuery's.
// reason is "" for the snapshot at the start, refused the cursor the server refused.
type refresher func(ctx context.Context, reason, refused string) error

// run connects until the stream stops. refresh, when not nil, recovers from
// refresh-required; refreshFirst calls it before the first connection.
func (c *consumer) run(ctx context.Context, refresh refresher, refreshFirst bool) (err error) {
	defer func() {
		if serr := c.setStatus(Closed); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	if err := c.setStatus(Connecting); err != nil {
		return err
	}
	if refreshFirst {
		if err := refresh(ctx, "", ""); err != nil {
			return err
		}
	}
	for {
		err := c.connect(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var he *HandlerError
		var rr *RefreshRequiredError
		var re *ReconnectError
		var se *StatusError
		var delay time.Duration
		switch {
		case errors.As(err, &he), errors.Is(err, ErrEventTooLarge), errors.Is(err, ErrUntrustedCertificate):
			return err
		case errors.As(err, &rr):
			if refresh == nil {
				return err
			}
			if err := c.pause(ctx, err, c.backoff.next()); err != nil {
				return err
			}
			if err := refresh(ctx, rr.Reason, rr.Cursor); err != nil {
				return err
			}
			continue
		case errors.As(err, &re):
			delay = re.RetryAfter
			if delay <= 0 {
				delay = c.backoff.next()
			}
		case errors.As(err, &se):
			if !se.Retryable() {
				return err
			}
			delay = se.RetryAfter + c.backoff.next()
		case errors.As(err, new(*FailureError)):
			return err
		default:
			delay = c.retry + c.backoff.next()
		}
		if err := c.pause(ctx, err, delay); err != nil {
			return err
		}
	}
}

// pause reports cause, switches to Reconnecting and waits delay. Errors: ctx's, or a
// *HandlerError from OnError or OnStatus.
func (c *consumer) pause(ctx context.Context, cause error, delay time.Duration) error {
	if err := c.report(cause); err != nil {
		return err
	}
	if err := c.setStatus(Reconnecting); err != nil {
		return err
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// streamURL is GET /v1/tables/{table}/stream, or /stream/{token} without a table.
func (c *consumer) streamURL() string {
	if c.opts.Table != "" {
		return c.opts.Shape.query(c.base.JoinPath("v1", "tables", url.PathEscape(c.opts.Table), "stream").String())
	}
	return c.opts.Shape.query(c.base.JoinPath("stream", url.PathEscape(c.token)).String())
}

// connect makes one connection and reads it until it ends, handing its events to the
// handlers. It always returns the reason the connection ended.
func (c *consumer) connect(ctx context.Context) error {
	connCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(c.silence, func() { cancel(ErrSilence) })
	defer wd.disarm()
	req, err := http.NewRequestWithContext(connCtx, http.MethodGet, c.streamURL(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", string(c.opts.Framing))
	req.Header.Set("Cache-Control", "no-cache")
	if c.opts.Table != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.cursor != "" {
		req.Header.Set("Last-Event-ID", c.cursor)
	}
	started := time.Now()
	defer func() {
		if time.Since(started) >= c.opts.StableAfter {
			c.backoff.reset()
		}
	}()
	wd.arm()
	resp, err := c.opts.HTTPClient.Do(req)
	wd.disarm()
	if err != nil {
		if errors.Is(context.Cause(connCtx), ErrSilence) {
			return fmt.Errorf("%w (%v, waiting for the response)", ErrSilence, c.silence)
		}
		return c.untrusted(fmt.Errorf("connect: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return readStatusError(resp, wd.reader(resp.Body))
	}
	events, err := newEventReader(resp.Header.Get("Content-Type"), wd.reader(resp.Body), c.opts.MaxEventBytes)
	if err != nil {
		return err
	}
	for {
		ev, err := events.next()
		if d, ok := events.reconnectionTime(); ok {
			c.retry = d
		}
		if err != nil {
			if errors.Is(err, ErrEventTooLarge) {
				return err
			}
			return readError(connCtx, c.silence, err)
		}
		if err := c.handle(ev); err != nil {
			return err
		}
	}
}

// readError names why the stream's body ended: silence, or an abrupt close.
func readError(connCtx context.Context, silence time.Duration, err error) error {
	if errors.Is(context.Cause(connCtx), ErrSilence) {
		return fmt.Errorf("%w (%v)", ErrSilence, silence)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrAbruptClose
	}
	return fmt.Errorf("%w: %w", ErrAbruptClose, err)
}

// handle processes one event. It returns nil to go on reading, or why the connection
// ends: a terminal event, a handler's error, or a payload that does not decode.
func (c *consumer) handle(ev wireEvent) error {
	switch ev.name {
	case eventSchema:
		schema, recs, err := decodePayload(ev.data)
		releaseAll(recs)
		if err != nil {
			return fmt.Errorf("schema event: %w", err)
		}
		if err := c.setStatus(Live); err != nil {
			return err
		}
		if c.opts.OnSchema != nil {
			if err := c.call("OnSchema", ev.id, func() error {
				return c.opts.OnSchema(SchemaChange{Cursor: ev.id, Schema: schema})
			}); err != nil {
				return err
			}
		}
		c.ack(ev.id)
	case eventBatch:
		if ev.id == "" {
			return errors.New("batch event without an id")
		}
		schema, recs, err := decodePayload(ev.data)
		if err != nil {
			return fmt.Errorf("batch event: %w", err)
		}
		defer releaseAll(recs)
		if c.opts.OnBatch != nil {
			if err := c.call("OnBatch", ev.id, func() error {
				return c.opts.OnBatch(Batch{Cursor: ev.id, Schema: schema, Records: recs})
			}); err != nil {
				return err
			}
		}
		c.ack(ev.id)
		c.backoff.reset()
	case eventRefreshRequired, eventReconnect, eventFailure:
		return c.terminal(ev)
	}
	return nil
}

// ack records cursor as processed. A schema event of a new subscription on an idle table
// carries the baseline, which is as good a place to resume from as a batch's cursor.
func (c *consumer) ack(cursor string) {
	if cursor != "" {
		c.cursor = cursor
	}
}

// terminal turns a terminal event into the error that ends the connection.
func (c *consumer) terminal(ev wireEvent) error {
	var d struct {
		Reason  string `json:"reason"`
		RetryMS int64  `json:"retry_ms"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	// A body that does not decode leaves the zero values: the event's name decides.
	_ = json.Unmarshal(ev.data, &d)
	switch ev.name {
	case eventRefreshRequired:
		return &RefreshRequiredError{Reason: d.Reason, Cursor: c.cursor}
	case eventReconnect:
		retry := time.Duration(min(max(d.RetryMS, 0), maxReconnectionTime.Milliseconds())) * time.Millisecond
		return &ReconnectError{Reason: d.Reason, RetryAfter: retry}
	default:
		return &FailureError{Code: d.Code, Message: d.Message}
	}
}

// call runs a handler, turning its error or panic into a *HandlerError.
func (c *consumer) call(handler, cursor string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &HandlerError{Handler: handler, Cursor: cursor, Err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
		}
	}()
	if err := fn(); err != nil {
		return &HandlerError{Handler: handler, Cursor: cursor, Err: err}
	}
	return nil
}

// setStatus reports a change of status to OnStatus.
func (c *consumer) setStatus(s Status) error {
	if s == c.status {
		return nil
	}
	c.status = s
	if c.opts.OnStatus == nil {
		return nil
	}
	return c.call("OnStatus", "", func() error { c.opts.OnStatus(s); return nil })
}

// report hands an error the consumer recovers from to OnError.
func (c *consumer) report(err error) error {
	if c.opts.OnError == nil {
		return nil
	}
	return c.call("OnError", "", func() error { c.opts.OnError(err); return nil })
}
