package stream

import (
	"context"
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
)

// Replay chunk bounds: one read transaction reads at most this many commits or rows, so a
// long replay holds bounded memory and yields frames as it goes. The first chunk is small,
// so that the first replayed batch leaves early; each next chunk doubles up to the bound.
const (
	replayFirstChunkCommits = 8
	replayChunkCommits      = 256
	replayChunkRows         = 256 << 10
	// replayChunkBytes bounds a chunk by the commits' sizes (CommitInfo.Bytes), a measure of their
	// encoded size: the replayed frames one stream holds at once (a chunk has at least one
	// commit, so one larger commit is a chunk of its own).
	replayChunkBytes = 1 << 20
	// replayReadsAtOnce bounds the replay reads from the table in progress, whose rows
	// and encodings are not yet frames in the replay cache.
	replayReadsAtOnce = 2
	// replaysUnmetered is how many streams may replay at once before Hub.ReplayRate
	// meters them: a few replays run at full speed, a storm shares the rate.
	replaysUnmetered = 4
)

// replay is the remaining replay of a resumed session: commits after the session's
// position through the head captured when it started.
type replay struct {
	activation store.Activation
	schemas    map[int]*store.Schema
	through    int64
	chunk      int64 // commits to read in the next chunk
}

// startReplay decodes the cursor, checks that it belongs to this table's current
// activation and that the range to replay is within bounds, and queues the first schema
// event. Every unusable cursor ends the stream with refresh-required (docs/design.md, "The
// cursor").
func (s *Session) startReplay(ctx context.Context) error {
	pos, tag, err := s.hub.cursors.DecodeShaped(s.cursor)
	if err != nil {
		var ce *store.CursorError
		if errors.As(err, &ce) {
			s.refresh(ce.Reason)
			return nil
		}
		return err
	}
	if tag != s.shapeTag {
		s.refresh(ReasonShapeMismatch)
		return nil
	}
	caughtUp := s.hub.Source.AwaitHead(ctx, pos)
	var reason string
	var behind bool
	var r replay
	var first *store.Schema
	err = s.hub.Source.Read(ctx, func(tx ReplayTx) error {
		info, err := tx.Table(ctx, s.table)
		if errors.Is(err, store.ErrTableNotFound) {
			reason = store.ReasonTableDropped
			return nil
		}
		if err != nil {
			return err
		}
		a, err := tx.Activation(ctx, pos.TableID, pos.Activation)
		switch {
		case store.ErrorCode(err) == store.CodeNotFound && !caughtUp:
			behind = true // an activation the source has not received yet
			return nil
		case store.ErrorCode(err) == store.CodeNotFound:
			reason = ReasonForeignCursor
			return nil
		case err != nil:
			return err
		case pos.TableID != info.ID || info.ID != s.tableID:
			// Another table's cursor, or that of an earlier table of this name.
			reason = ReasonForeignCursor
			if a.Ended && store.SameName(a.TableName, s.table) {
				reason = a.Reason
			}
			return nil
		case a.Ended:
			reason = a.Reason
			return nil
		case pos.Seq > a.Head && !caughtUp:
			behind = true
			return nil
		case pos.Seq > a.Head:
			reason = ReasonCursorAhead
			return nil
		}
		commits, rows, err := tx.CommitStats(ctx, a, pos.Seq, a.Head)
		if err != nil {
			return err
		}
		if (s.hub.MaxReplayCommits > 0 && commits > s.hub.MaxReplayCommits) || (s.hub.MaxReplayRows > 0 && rows > s.hub.MaxReplayRows) {
			reason = ReasonReplayLimit
			return nil
		}
		schemas, err := tx.Schemas(ctx, a)
		if err != nil {
			return err
		}
		first = &info.Schema
		if commits > 0 {
			next, err := tx.Commits(ctx, a, pos.Seq, pos.Seq+1)
			if err != nil {
				return err
			}
			first = schemas[next[0].SchemaVersion]
		}
		r = replay{activation: a, schemas: schemas, through: a.Head, chunk: replayFirstChunkCommits}
		return nil
	})
	if behind {
		s.out = append(s.out, terminalFrame(s.framing, EventReconnect, ReasonSourceBehind, s.hub.RetryMS(), ""))
		return nil
	}
	if ended, err := s.endRead(ctx, err, reason); ended {
		return err
	}
	s.pos = pos
	if !s.appendSchema(first) {
		return nil
	}
	if r.through > pos.Seq {
		s.replay = &r
		s.hub.replaying.Add(1)
	}
	return nil
}

// replayNext queues the frames of the next chunk of the replay; once the replay reached
// its head the session continues from its place in the live log, where commits already replayed are
// dropped by seq. The frames come from the hub's replay cache, shared with every session
// replaying the same commits: this session reads from the table, in one read transaction,
// only the commits no other session has read or is reading, and waits for the others.
func (s *Session) replayNext(ctx context.Context) error {
	r := s.replay
	var reason string
	var entries []*replayEntry
	var chunkBytes int64
	err := s.hub.Source.Read(ctx, func(tx ReplayTx) error {
		a, err := tx.Activation(ctx, r.activation.TableID, r.activation.ID)
		if err != nil {
			return err
		}
		if a.Ended {
			reason = a.Reason
			return nil
		}
		commits, err := tx.Commits(ctx, a, s.pos.Seq, min(r.through, s.pos.Seq+r.chunk))
		r.chunk = min(2*r.chunk, replayChunkCommits)
		if err != nil {
			return err
		}
		var rows, bytes int64
		for i, c := range commits {
			rows, bytes = rows+c.Rows, bytes+c.Bytes
			if (rows > replayChunkRows || bytes > replayChunkBytes) && i > 0 {
				commits = commits[:i]
				break
			}
		}
		keys := make([]replayKey, len(commits))
		for i, c := range commits {
			keys[i] = replayKey{activation: a.ID, seq: c.Seq, framing: s.framing, encoding: s.encoding, shape: s.shapeKey}
		}
		chunkBytes = bytes
		var owned []bool
		entries, owned = s.hub.replays.acquire(keys)
		return s.fillReplay(ctx, tx, a, commits, entries, owned)
	})
	if err != nil || reason != "" {
		s.releaseAll(entries)
	}
	if err == nil && reason == "" && s.hub.replaying.Load() > replaysUnmetered {
		if werr := s.hub.replayRate.WaitN(ctx, int(min(chunkBytes, replayChunkBytes))); werr != nil {
			s.releaseAll(entries)
			return ctx.Err()
		}
	}
	if errors.Is(err, errReplayFrameTooLarge) {
		s.refresh(ReasonReplayLimit)
		return nil
	}
	var shapeErr *shapeError
	if errors.As(err, &shapeErr) {
		s.out = append(s.out, s.shapeFailure())
		return nil
	}
	if errors.Is(err, errReplayCapacity) {
		s.out = append(s.out, terminalFrame(s.framing, EventReconnect, "replay_capacity", s.hub.RetryMS(), ""))
		return nil
	}
	if ended, err := s.endRead(ctx, err, reason); ended {
		return err
	}
	for i, e := range entries {
		if err := s.hub.replays.wait(ctx, e); err != nil {
			// Given up by the session that read it (its client left): the next call
			// reads it again. The frames queued so far stay queued.
			s.releaseAll(entries[i:])
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}
		if e.version != s.schemaVersion && !s.appendSchema(r.schemas[e.version]) {
			s.releaseAll(entries[i:])
			return nil
		}
		f := e.frame
		f.pin = e
		s.out = append(s.out, f)
		s.pos = f.Commit.Position
		s.lastData = time.Now()
	}
	if s.pos.Seq >= r.through {
		s.endReplay()
	}
	return nil
}

// fillReplay reads the commits this session reserved (owned) from the table, in runs of
// consecutive commits, and fills their cache entries with their batch frames. At most
// replayReadsAtOnce sessions read at once: a read holds its commits' rows and their
// encoding (at least one whole commit) until they are
// frames the cache accounts for. On error
// every reservation not filled yet is given up, so that no other session waits for it.
func (s *Session) fillReplay(ctx context.Context, tx ReplayTx, a store.Activation, commits []store.CommitInfo, entries []*replayEntry, owned []bool) (err error) {
	next := 0 // index of the next owned entry to fill
	defer func() {
		if err != nil {
			for i := next; i < len(entries); i++ {
				if owned[i] {
					s.hub.replays.giveUp(entries[i], err)
				}
			}
		}
	}()
	for start := 0; start < len(commits); {
		if !owned[start] {
			start++
			continue
		}
		end := start
		for end < len(commits) && owned[end] {
			end++
		}
		next = start
		select {
		case s.hub.replayReads <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		err := tx.ReadCommits(ctx, a, s.replay.schemas, commits[start:end], func(c store.CommitInfo, schema *store.Schema, recs []arrow.RecordBatch) error {
			shaped, as, release, err := s.shapeRecords(ctx, schema, recs)
			if err != nil {
				return err
			}
			rows := c.Rows
			if !s.shape.Empty() {
				rows = 0
				for _, r := range shaped {
					rows += r.NumRows()
				}
			}
			p, err := batchPayload(s.encoding, as, shaped)
			release()
			if err != nil {
				return err
			}
			pos := store.Position{TableID: a.TableID, Activation: a.ID, Seq: c.Seq}
			f, err := dataFrame(s.framing, EventBatch, s.encodeCursor(pos), p,
				CommitMeta{Position: pos, Rows: rows, CommittedAt: c.CommittedAt, Replayed: true})
			if err != nil {
				return err
			}
			s.hub.replayRead.Add(1)
			if err := s.hub.replays.fill(entries[next], f, schema.Version); err != nil {
				next++ // fill gave the reservation up itself
				return err
			}
			next++
			return nil
		})
		<-s.hub.replayReads
		if err != nil {
			return err
		}
		start = end
	}
	return nil
}

// releaseAll releases the pins of entries.
func (s *Session) releaseAll(entries []*replayEntry) {
	for _, e := range entries {
		s.hub.replays.release(e)
	}
}

// endRead settles a replay read: the context's error when the client left,
// refresh-required when the read found a reason or the source refused the cursor (a
// *store.CursorError, Source.Read), a failure frame for any other error; ended is false
// when the replay goes on.
func (s *Session) endRead(ctx context.Context, err error, reason string) (ended bool, _ error) {
	var ce *store.CursorError
	switch {
	case err != nil && ctx.Err() != nil:
		return true, ctx.Err()
	case errors.As(err, &ce):
		s.refresh(ce.Reason)
		return true, nil
	case err != nil:
		s.out = append(s.out, s.readFailure(err))
		return true, nil
	case reason != "":
		s.refresh(reason)
		return true, nil
	}
	return false, nil
}
