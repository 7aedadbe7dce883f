package jetstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/ducktail/ducktail/store"
)

// Subjects: every event of table id N travels on "<prefix>.t.N", so that its commits,
// schema changes and activation ends keep one order; token revocations on
// "<prefix>.tokens" (docs/scaling.md, "Messages").
const (
	tableSubjectFormat = "%s.t.%d"
	tokenSubjectFormat = "%s.tokens"
)

// Header names of every message (docs/scaling.md, "Messages").
const (
	// HeaderEvent is the event kind: EventCommit, EventSchema, EventActivationEnded or
	// EventTokenRevoked.
	HeaderEvent = "Ducktail-Event"
	// HeaderTable is the table's name, HeaderTableID its id (decimal).
	HeaderTable   = "Ducktail-Table"
	HeaderTableID = "Ducktail-Table-Id"
	// HeaderActivation is the activation id (a UUID), HeaderSeq the position's seq
	// (decimal): a commit's own, or the table's head when a schema changed or an
	// activation ended.
	HeaderActivation = "Ducktail-Activation"
	HeaderSeq        = "Ducktail-Seq"
	// HeaderSchemaVersion is the schema version a commit was written under, or the new
	// version of a schema event.
	HeaderSchemaVersion = "Ducktail-Schema-Version"
	// HeaderCommittedAt is a commit's time, RFC 3339 with nanoseconds, UTC.
	HeaderCommittedAt = "Ducktail-Committed-At"
	// HeaderRows is a commit's row count (decimal).
	HeaderRows = "Ducktail-Rows"
	// HeaderReason is why an activation ended (store.ReasonTableReset or
	// store.ReasonTableDropped); HeaderNewActivation the activation replacing it on a reset.
	HeaderReason        = "Ducktail-Reason"
	HeaderNewActivation = "Ducktail-New-Activation"
	// HeaderTokenID names a revoked token.
	HeaderTokenID = "Ducktail-Token-Id"
)

// Event kinds, the values of HeaderEvent.
const (
	EventCommit          = "commit"
	EventSchema          = "schema"
	EventActivationEnded = "activation-ended"
	EventTokenRevoked    = "token-revoked"
)

// TableSubject returns the subject of table tableID's events under prefix.
func TableSubject(prefix string, tableID int64) string {
	return fmt.Sprintf(tableSubjectFormat, prefix, tableID)
}

// commitMessage returns the message of one commit: headers naming its position, schema
// version, rows and time, and the Arrow IPC stream format (schema, then recs) as data.
// Its Nats-Msg-Id is "<activation>.<seq>", so that a republish is dropped within the
// stream's duplicate window.
func commitMessage(prefix, table string, pos store.Position, schema *store.Schema, rows int64, at time.Time, recs []arrow.RecordBatch) (*nats.Msg, string, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema.Arrow()))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			w.Close()
			return nil, "", fmt.Errorf("encode commit %d of %s: %w", pos.Seq, table, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("encode commit %d of %s: %w", pos.Seq, table, err)
	}
	m := tableMessage(prefix, EventCommit, table, pos)
	m.Header.Set(HeaderSchemaVersion, strconv.Itoa(schema.Version))
	m.Header.Set(HeaderRows, strconv.FormatInt(rows, 10))
	m.Header.Set(HeaderCommittedAt, at.UTC().Format(time.RFC3339Nano))
	m.Data = buf.Bytes()
	return m, fmt.Sprintf("%s.%d", pos.Activation, pos.Seq), nil
}

// schemaMessage returns the message of a new schema version: its JSON (store.Schema's
// encoding) as data; id "<activation>.s<version>".
func schemaMessage(prefix, table string, pos store.Position, schema *store.Schema) (*nats.Msg, string, error) {
	data, err := json.Marshal(schema)
	if err != nil {
		return nil, "", err
	}
	m := tableMessage(prefix, EventSchema, table, pos)
	m.Header.Set(HeaderSchemaVersion, strconv.Itoa(schema.Version))
	m.Data = data
	return m, fmt.Sprintf("%s.s%d", pos.Activation, schema.Version), nil
}

// endedMessage returns the message of an ended activation; id "<activation>.end".
func endedMessage(prefix, table string, pos store.Position, reason string, next uuid.UUID) *nats.Msg {
	m := tableMessage(prefix, EventActivationEnded, table, pos)
	m.Header.Set(HeaderReason, reason)
	if next != uuid.Nil {
		m.Header.Set(HeaderNewActivation, next.String())
	}
	return m
}

// revokedMessage returns the message of a revoked token; id "revoked.<token id>".
func revokedMessage(prefix, tokenID string) *nats.Msg {
	m := nats.NewMsg(fmt.Sprintf(tokenSubjectFormat, prefix))
	m.Header.Set(HeaderEvent, EventTokenRevoked)
	m.Header.Set(HeaderTokenID, tokenID)
	return m
}

func tableMessage(prefix, kind, table string, pos store.Position) *nats.Msg {
	m := nats.NewMsg(TableSubject(prefix, pos.TableID))
	m.Header.Set(HeaderEvent, kind)
	m.Header.Set(HeaderTable, table)
	m.Header.Set(HeaderTableID, strconv.FormatInt(pos.TableID, 10))
	m.Header.Set(HeaderActivation, pos.Activation.String())
	m.Header.Set(HeaderSeq, strconv.FormatInt(pos.Seq, 10))
	return m
}

// published is how far a table's events have reached the stream: the activation, the
// last commit's seq and the last schema version published in it.
type published struct {
	activation uuid.UUID
	seq        int64
	version    int
}

// publishedFrom reads the position a table message's headers carry. Errors: a header
// missing or malformed (a message not written by this package).
func publishedFrom(h nats.Header) (published, error) {
	var p published
	var err error
	if p.activation, err = uuid.Parse(h.Get(HeaderActivation)); err != nil {
		return p, fmt.Errorf("%s: %w", HeaderActivation, err)
	}
	if p.seq, err = strconv.ParseInt(h.Get(HeaderSeq), 10, 64); err != nil {
		return p, fmt.Errorf("%s: %w", HeaderSeq, err)
	}
	if v := h.Get(HeaderSchemaVersion); v != "" {
		if p.version, err = strconv.Atoi(v); err != nil {
			return p, fmt.Errorf("%s: %w", HeaderSchemaVersion, err)
		}
	}
	return p, nil
}

// decodeCommit decodes a commit message's data, the Arrow IPC stream commitMessage wrote,
// into one record batch of schema (its batches concatenated when there are several).
// Errors: data that is not such a stream, or whose schema is not schema's.
func decodeCommit(data []byte, schema *store.Schema) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	want := schema.Arrow()
	if !r.Schema().Equal(want) {
		return nil, fmt.Errorf("the payload's schema %s is not schema version %d's", r.Schema(), schema.Version)
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if len(recs) == 1 {
		rec := recs[0]
		rec.Retain()
		return rec, nil
	}
	cols := make([]arrow.Array, len(want.Fields()))
	var rows int64
	for _, rec := range recs {
		rows += rec.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, rec := range recs {
			parts[j] = rec.Column(i)
		}
		if len(parts) == 0 {
			b := array.NewBuilder(memory.DefaultAllocator, want.Field(i).Type)
			cols[i] = b.NewArray()
			b.Release()
			continue
		}
		col, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, err
		}
		cols[i] = col
	}
	rec := array.NewRecordBatch(want, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}
