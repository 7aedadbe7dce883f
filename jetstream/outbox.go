package jetstream

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
)

// catchUpChunk is how many commits one read transaction of a catch-up reads.
const catchUpChunk = 256

// sendCommit publishes one commit, after the schema version it was written under when the
// stream does not have that version yet, and records it.
func (p *Publisher) sendCommit(ctx context.Context, table string, pos store.Position, schema *store.Schema, rows int64, at time.Time, recs []arrow.RecordBatch) error {
	st := p.state[pos.TableID]
	if st.activation != pos.Activation || schema.Version > st.version {
		if err := p.sendSchema(ctx, table, store.Position{TableID: pos.TableID, Activation: pos.Activation, Seq: pos.Seq - 1}, schema); err != nil {
			return err
		}
	}
	m, id, err := commitMessage(p.SubjectPrefix, table, pos, schema, rows, at, recs)
	if err != nil {
		return err
	}
	if err := p.send(ctx, m, id); err != nil {
		return err
	}
	p.lastCommitted.Store(at.UnixNano())
	p.state[pos.TableID] = published{activation: pos.Activation, seq: pos.Seq, version: schema.Version}
	return nil
}

// sendSchema publishes a schema version of the activation at pos and records it.
// The version is put in the catalog bucket first, so that a stream node that reads a
// commit of it finds it there.
func (p *Publisher) sendSchema(ctx context.Context, table string, pos store.Position, schema *store.Schema) error {
	if err := p.putJSON(ctx, schemaKey(pos.TableID, pos.Activation, schema.Version), schema); err != nil {
		return err
	}
	m, id, err := schemaMessage(p.SubjectPrefix, table, pos, schema)
	if err != nil {
		return err
	}
	if err := p.send(ctx, m, id); err != nil {
		return err
	}
	p.state[pos.TableID] = published{activation: pos.Activation, seq: pos.Seq, version: schema.Version}
	return nil
}

// sendEnded publishes the end of the activation at pos; the table's next messages belong
// to next (uuid.Nil after a drop). The ended activation is put in the catalog bucket first,
// so that a stream node judges its cursors as the writer does.
func (p *Publisher) sendEnded(ctx context.Context, table string, pos store.Position, reason string, next uuid.UUID) error {
	if err := p.putJSON(ctx, activationKey(pos.TableID, pos.Activation), activationEntry{Table: table, Head: pos.Seq, Reason: reason}); err != nil {
		return err
	}
	if err := p.send(ctx, endedMessage(p.SubjectPrefix, table, pos, reason, next), pos.Activation.String()+".end"); err != nil {
		return err
	}
	p.state[pos.TableID] = published{activation: next}
	return nil
}

// catchUpAll reads the commit log of every live table for what the stream lacks, then
// publishes every revoked token again (a revocation is idempotent; the duplicate window
// drops a recent one), then makes the catalog bucket match the store.
func (p *Publisher) catchUpAll(ctx context.Context) error {
	for _, info := range p.db.Tables() {
		if err := p.catchUp(ctx, info.Name); err != nil {
			return err
		}
	}
	for _, t := range p.db.Tokens() {
		if !t.RevokedAt.IsZero() {
			if err := p.send(ctx, revokedMessage(p.SubjectPrefix, t.ID), "revoked."+t.ID); err != nil {
				return err
			}
		}
	}
	return p.syncCatalog(ctx)
}

// catchUp publishes, from the commit log, what table name's subject lacks: the end of an
// earlier activation the stream still has open, then the current activation's schema
// versions and commits after the stream's last one, in seq order, catchUpChunk commits
// per read transaction. A dropped table has nothing to catch up.
func (p *Publisher) catchUp(ctx context.Context, name string) error {
	var a store.Activation
	var schemas map[int]*store.Schema
	var st published
	err := p.db.Read(ctx, func(tx *store.ReadTx) error {
		info, err := tx.Table(ctx, name)
		if err != nil {
			return err
		}
		if st, err = p.stateOf(ctx, info.ID); err != nil {
			return err
		}
		if st.activation != uuid.Nil && st.activation != info.Head.Activation {
			old, err := tx.Activation(ctx, info.ID, st.activation)
			if err != nil {
				return err
			}
			if old.Head > st.seq {
				p.Logger.Warn("jetstream: commits of an ended activation were not published; stream nodes get refresh-required",
					"table", name, "published_seq", st.seq, "head", old.Head)
			}
			if err := p.sendEnded(ctx, name, store.Position{TableID: info.ID, Activation: old.ID, Seq: old.Head}, old.Reason, info.Head.Activation); err != nil {
				return err
			}
			st = published{activation: info.Head.Activation}
		}
		if a, err = tx.Activation(ctx, info.ID, info.Head.Activation); err != nil {
			return err
		}
		schemas, err = tx.Schemas(ctx, a)
		return err
	})
	if errors.Is(err, store.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.activation != a.ID {
		st = published{activation: a.ID}
	}
	for after := st.seq; after < a.Head; after = min(after+catchUpChunk, a.Head) {
		err := p.db.Read(ctx, func(tx *store.ReadTx) error {
			commits, err := tx.Commits(ctx, a, after, min(after+catchUpChunk, a.Head))
			if err != nil {
				return err
			}
			commits = p.skipExpired(a, commits)
			return tx.ReadCommits(ctx, a, schemas, commits, func(c store.CommitInfo, s *store.Schema, recs []arrow.RecordBatch) error {
				pos := store.Position{TableID: a.TableID, Activation: a.ID, Seq: c.Seq}
				return p.sendCommit(ctx, name, pos, s, c.Rows, c.CommittedAt, recs)
			})
		})
		if err != nil {
			return err
		}
	}
	// Schema versions made after the last commit.
	versions := make([]int, 0, len(schemas))
	for v := range schemas {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	for _, v := range versions {
		if cur := p.state[a.TableID]; cur.activation != a.ID || v > cur.version {
			if err := p.sendSchema(ctx, name, store.Position{TableID: a.TableID, Activation: a.ID, Seq: a.Head}, schemas[v]); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipExpired drops the leading commits committed longer than the stream's retention
// (MaxAge) ago, recording them as published: published on time, JetStream would have
// expired them by now, so a writer restarted after a long outage, or a table whose last
// message expired, does not fill the stream with them again (docs/scaling.md, "Retention").
func (p *Publisher) skipExpired(a store.Activation, commits []store.CommitInfo) []store.CommitInfo {
	if p.MaxAge <= 0 {
		return commits
	}
	cutoff := p.Now().Add(-p.MaxAge)
	i := 0
	for i < len(commits) && commits[i].CommittedAt.Before(cutoff) {
		i++
	}
	if i > 0 {
		st := p.state[a.TableID]
		if st.activation != a.ID {
			st = published{activation: a.ID}
		}
		st.seq = commits[i-1].Seq
		p.state[a.TableID] = st
	}
	return commits[i:]
}
