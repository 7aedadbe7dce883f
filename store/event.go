package store

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"
)

// Publisher receives every durable change, after DuckDB's commit returned, in commit
// order: for one table, CommitEvents arrive in seq order, and a SchemaEvent or
// ActivationEnded arrives between the commits before and after it. Publish is called
// from the store's single writer goroutine, so it must not block; stream.Hub satisfies it
// (docs/design.md, "The one sentence"; published after commit, never inside it).
type Publisher interface {
	Publish(Event)
}

// Event is one durable change handed to the Publisher: a CommitEvent, SchemaEvent,
// ActivationStarted, ActivationEnded, TokenCreated or TokenRevoked, each a value; no
// other type implements it.
type Event interface {
	event()
}

// Reasons an activation ends, as sent in refresh-required events.
const (
	ReasonTableReset   = "table_reset"
	ReasonTableDropped = "table_dropped"
)

// CommitEvent is one commit, with its rows.
type CommitEvent struct {
	TableName string
	// Position is the commit's own position.
	Position Position
	// Schema is the schema version the commit was written under.
	Schema *Schema
	// Record holds the commit's rows, named and typed by Schema.Arrow(). It is shared:
	// never mutate it. Its memory is Go-managed, so holding it is safe.
	Record      arrow.RecordBatch
	Rows        int64
	CommittedAt time.Time
}

// SchemaEvent is a new schema version of a table; commits from Schema.FromSeq use it.
type SchemaEvent struct {
	TableName string
	// Position is the table's head when the schema changed.
	Position Position
	// Schema is the new version.
	Schema *Schema
}

// ActivationEnded says a table's activation ended: the table was reset or dropped.
type ActivationEnded struct {
	TableName string
	// Position is the last position of the ended activation.
	Position Position
	// Reason is ReasonTableReset or ReasonTableDropped.
	Reason string
	// NewActivation is the activation that replaced the ended one on a reset; zero on a
	// drop.
	NewActivation uuid.UUID
}

// ActivationStarted says a table has a new, empty activation: the table was created, or
// reset (after the ActivationEnded of the activation it replaces). Streams have nothing
// to deliver for it; a stream node's catalog learns of the table from it (package
// jetstream, docs/scaling.md).
type ActivationStarted struct {
	TableName string
	CreatedAt time.Time
	// Position is the new activation's head, seq 0.
	Position Position
	// Schema is the activation's first schema version.
	Schema *Schema
}

// TokenCreated says a token was created; Token carries its secret's hash
// (Token.SecretHash), never the secret.
type TokenCreated struct {
	Token Token
}

// TokenRevoked says a token was revoked.
type TokenRevoked struct {
	// TokenID names the revoked token.
	TokenID string
	// Token is the token as revoked, RevokedAt set.
	Token Token
}

func (CommitEvent) event()       {}
func (SchemaEvent) event()       {}
func (ActivationEnded) event()   {}
func (ActivationStarted) event() {}
func (TokenCreated) event()      {}
func (TokenRevoked) event()      {}

type nopPublisher struct{}

func (nopPublisher) Publish(Event) {}
