package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// StackConfig holds the parts of one ducktail server before they are opened. Set each
// part's own tuning fields (flags, tests) before OpenStack; OpenStack sets the fields that
// join the parts.
type StackConfig struct {
	// Store is the database, not yet open; required (store.NewDB). Its Publisher is left
	// nil, and becomes the Hub; one set by the caller (a test watching the events) must
	// pass every event on to the Hub.
	Store *store.DB
	// Hub is the stream hub, not yet open; nil means stream.NewHub's defaults.
	Hub *stream.Hub
	// Reader serves snapshots and queries; nil means snapshot.NewReader's defaults.
	Reader *snapshot.Reader
	// API configures the HTTP handler (NewServer).
	API Config
	// Logger, when not nil, becomes every part's logger, with component=store, stream,
	// snapshot or api; nil leaves each part's own Logger as set.
	Logger *slog.Logger
}

// Stack is one opened ducktail server: the store publishing to the hub, the snapshot
// reader and the HTTP handler over all three. Close it when done.
type Stack struct {
	Store   *store.DB
	Hub     *stream.Hub
	Reader  *snapshot.Reader
	Handler http.Handler
}

// OpenStack joins and opens the parts of cfg, in the one order they need: the hub is (or
// is behind) the store's Publisher before the store opens (so no commit goes unpublished), the hub and
// the reader read from the opened store and encode cursors with its codec
// (store.DB.Cursors), and the handler serves them. Errors: cfg.Store nil, or the error of
// the part that failed to open (store.DB.Open's unwrapped, so that a caller can tell a
// locked database file); nothing is left open on error.
func OpenStack(ctx context.Context, cfg StackConfig) (*Stack, error) {
	if cfg.Store == nil {
		return nil, errors.New("api: OpenStack: StackConfig.Store is nil")
	}
	st := &Stack{Store: cfg.Store, Hub: cfg.Hub, Reader: cfg.Reader}
	if st.Hub == nil {
		st.Hub = stream.NewHub(nil)
	}
	if st.Reader == nil {
		st.Reader = snapshot.NewReader(nil)
	}
	if cfg.Logger != nil {
		st.Store.Logger = cfg.Logger.With("component", "store")
		st.Hub.Logger = cfg.Logger.With("component", "stream")
		st.Reader.Logger = cfg.Logger.With("component", "snapshot")
		cfg.API.Logger = cfg.Logger.With("component", "api")
	}
	if st.Store.Publisher == nil {
		st.Store.Publisher = st.Hub
	}
	if err := st.Store.Open(ctx); err != nil {
		return nil, err
	}
	st.Hub.Source = stream.Local{DB: st.Store}
	st.Hub.Shaper = st.Store
	if err := st.Hub.Open(); err != nil {
		st.Store.Close()
		return nil, err
	}
	st.Reader.DB = st.Store
	st.Reader.Cursor = st.Store.Cursors().Encode
	if err := st.Reader.Open(); err != nil {
		st.Close()
		return nil, fmt.Errorf("api: OpenStack: %w", err)
	}
	st.Handler = NewServer(cfg.API, st.Store, st.Hub, st.Reader)
	return st, nil
}

// Close stops the hub and closes the store. Drain the hub first (stream.Hub.Drain) to
// let open streams reconnect elsewhere; Close cuts them.
func (st *Stack) Close() error {
	return errors.Join(st.Hub.Close(), st.Store.Close())
}
