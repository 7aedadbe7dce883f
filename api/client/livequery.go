package client

import (
	"context"
	"errors"
	"time"
)

// LiveOptions configure LiveQuery: the stream's Options (Table is required) and the
// snapshot that starts it and replaces the caller's state after refresh-required.
type LiveOptions struct {
	Options
	// SQL, when set, is the SELECT whose result is the snapshot, run through
	// POST /v1/query (a token of purpose query is needed); it must read Options.Table,
	// whose cursor in Ducktail-Cursors starts the stream. "" snapshots the whole table
	// through GET /v1/tables/{Table}/snapshot (a stream or query token will do). The
	// batches that follow are the table's commits, whatever the SQL: a query that filters
	// or projects shapes the snapshot, and the caller applies the same to the batches.
	SQL string
	// Params are SQL's positional parameters ($1, $2, … or ?), as JSON values.
	Params []any
	// StartWithSnapshot starts with a snapshot and streams from its cursor, instead of
	// from Options.Cursor (or from now, when that is "").
	StartWithSnapshot bool
	// OnSnapshot is called with each snapshot: at the start when StartWithSnapshot is
	// set, and after each refresh-required, when it must replace everything the caller
	// built from earlier snapshots and batches. Returning nil acknowledges its cursor;
	// an error or a panic ends LiveQuery with a *HandlerError.
	OnSnapshot func(Snapshot) error
}

// LiveQuery is Stream with recovery from refresh-required: when the server says the
// cursor cannot be continued (the table was reset, the cursor is past the replay bounds),
// and at the start when opts.StartWithSnapshot is set, it reads a snapshot, hands it to
// OnSnapshot, and subscribes from the snapshot's cursor, so that OnSnapshot's rows and the
// batches after them are exactly the table (docs/design.md, "The atomic hand-off";
// "Reconnection"). It never retries a cursor the server refused. Snapshot reads that fail
// are retried like connections (408, 429, 5xx, network), each failure reported to
// OnError.
//
// It returns what Stream returns, with these differences: *RefreshRequiredError only
// when a fresh snapshot returned the very cursor the server refused; ErrNoTable when
// opts.Table is ""; ErrNoCursor when a snapshot answer lacks the table's cursor (the SQL
// does not read the table); ErrShapeWithSQL when opts has both a Shape and SQL (a query's
// cursor is the whole table's, which a shaped stream cannot continue); *StatusError for a snapshot refusal too (404 once the table
// is dropped).
func LiveQuery(ctx context.Context, baseURL, token string, opts LiveOptions) error {
	if opts.Table == "" {
		return ErrNoTable
	}
	if opts.SQL != "" && !opts.Shape.IsZero() {
		return ErrShapeWithSQL
	}
	c, err := newConsumer(baseURL, token, opts.Options)
	if err != nil {
		return err
	}
	refresh := func(ctx context.Context, reason, refused string) error {
		return c.refresh(ctx, opts, reason, refused)
	}
	return c.run(ctx, refresh, opts.StartWithSnapshot)
}

// refresh reads a snapshot, retrying what can be retried, hands it to OnSnapshot and
// moves the cursor to it.
func (c *consumer) refresh(ctx context.Context, opts LiveOptions, reason, refused string) error {
	for {
		snap, err := c.fetchSnapshot(ctx, opts.SQL, opts.Params)
		if err == nil {
			return c.applySnapshot(snap, reason, refused, opts.OnSnapshot)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *StatusError
		var delay time.Duration
		switch {
		case errors.Is(err, ErrNoCursor), errors.Is(err, ErrUntrustedCertificate):
			return err
		case errors.As(err, &se):
			if !se.Retryable() {
				return err
			}
			delay = se.RetryAfter
		}
		if err := c.pause(ctx, err, delay+c.backoff.next()); err != nil {
			return err
		}
	}
}

// applySnapshot hands snap to onSnapshot and acknowledges its cursor.
func (c *consumer) applySnapshot(snap *Snapshot, reason, refused string, onSnapshot func(Snapshot) error) error {
	defer releaseAll(snap.Records)
	if refused != "" && snap.Cursor == refused {
		return &RefreshRequiredError{Reason: reason, Cursor: refused}
	}
	snap.Reason = reason
	if onSnapshot != nil {
		if err := c.call("OnSnapshot", snap.Cursor, func() error { return onSnapshot(*snap) }); err != nil {
			return err
		}
	}
	c.cursor = snap.Cursor
	return nil
}
