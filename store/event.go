package store

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"
)

// Publisher receives every durable change, after DuckDB's commit returned, in commit
// order: for one table, EventCommit events arrive in seq order, and an EventSchema or
// EventActivationEnded arrives between the commits before and after it. Publish is called
// from the store's single writer goroutine, so it must not block; stream.Hub satisfies it
// (DESIGN.md, "The one sentence"; STYLE.md: publish after commit, never inside it).
type Publisher interface {
	Publish(Event)
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventCommit: one commit, with its rows.
	EventCommit EventKind = iota + 1
	// EventSchema: a new schema version; commits from Schema.FromSeq use it.
	EventSchema
	// EventActivationEnded: the activation of Position ended (table reset or dropped);
	// Reason says which.
	EventActivationEnded
	// EventTokenRevoked: token TokenID was revoked.
	EventTokenRevoked
)

// Reasons an activation ends, as sent in refresh-required events.
const (
	ReasonTableReset   = "table_reset"
	ReasonTableDropped = "table_dropped"
)

// Event is one durable change handed to the Publisher.
type Event struct {
	Kind      EventKind
	TableName string
	// Position is the commit's own position (EventCommit), the head when the schema
	// changed (EventSchema), or the last position of the ended activation.
	Position Position
	// Schema is the schema version the commit was written under (EventCommit) or the new
	// version (EventSchema).
	Schema *Schema
	// Record holds the commit's rows, named and typed by Schema.Arrow(). It is shared:
	// never mutate it. Its memory is Go-managed, so holding it is safe.
	Record      arrow.RecordBatch
	Rows        int64
	CommittedAt time.Time
	// Reason is ReasonTableReset or ReasonTableDropped for EventActivationEnded.
	Reason string
	// NewActivation is the activation that replaced the ended one on a reset.
	NewActivation uuid.UUID
	// TokenID names the revoked token of EventTokenRevoked.
	TokenID string
}

type nopPublisher struct{}

func (nopPublisher) Publish(Event) {}
