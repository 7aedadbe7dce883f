package store

import (
	"context"
	"time"
)

// returns is what the writer expects of the appends to come, for group commit: the writers
// of the group it answered last that had come back promptly before, by how many of their
// appends it holds, and when each writer's last append was answered. Used by the writer
// goroutine only.
//
// A writer that sends its next append as soon as the last one is answered (a closed loop,
// as a client waiting for each acknowledgement) comes back within a few hundred
// microseconds; one that sleeps between appends, or sends at its own pace, may not come
// back at all. So a writer is expected only when its append came within CommitDelay of
// its previous answer: group commit then waits for the closed-loop writers, and never for
// the others. Without the wait, closed-loop writers split into two halves that commit in
// turn, the half queued while the other commits taken alone (8 clients: groups of about 4
// instead of 8, each paying a DuckDB transaction and its fsync).
type returns struct {
	// expect counts, by writer, the appends of the last group whose writers came back
	// promptly; expecting is their total still to come, and answeredAt when that group
	// was answered.
	expect     map[string]int
	expecting  int
	answeredAt time.Time
	// answered is when each writer's last append was answered, kept for CommitDelay: it
	// holds at most the writers answered in the last CommitDelay.
	answered map[string]time.Time
}

// newReturns returns a returns that expects nothing.
func newReturns() returns {
	return returns{expect: map[string]int{}, answered: map[string]time.Time{}}
}

// gather returns the group commit that starts with append o: the appends queued behind
// it, up to MaxGroupCommits and MaxGroupRows, and the catalog change that ended it, if one
// did. While appends of the writers it expects (returns) have not come, it waits for them
// up to CommitDelay; the wait also ends when ctx does.
func (w *writer) gather(ctx context.Context, o *op) (group []*op, next *op) {
	group = []*op{o}
	rows := o.batch.Record.NumRows()
	r := &w.returns
	if w.db.CommitDelay <= 0 || w.db.Now().Sub(r.answeredAt) > w.db.CommitDelay {
		clear(r.expect)
		r.expecting = 0
	}
	r.arrived(o)
	var delay <-chan time.Time
	for len(group) < w.db.MaxGroupCommits && rows < w.db.MaxGroupRows {
		var n *op
		select {
		case n = <-w.ops:
		default:
			if r.expecting == 0 {
				return group, nil
			}
			if delay == nil {
				t := time.NewTimer(w.db.CommitDelay)
				defer t.Stop()
				delay = t.C
			}
			select {
			case n = <-w.ops:
			case <-delay:
				return group, nil
			case <-ctx.Done():
				return group, nil
			}
		}
		if n.batch == nil {
			return group, n
		}
		r.arrived(n)
		group = append(group, n)
		rows += n.batch.Record.NumRows()
	}
	return group, nil
}

// arrived counts append o against the appends expected.
func (r *returns) arrived(o *op) {
	if n := r.expect[o.batch.Writer]; n > 0 {
		r.expect[o.batch.Writer] = n - 1
		r.expecting--
	}
}

// noteAnswered records that the appends of plans were answered now: the next group
// expects back the writers among them whose append came within CommitDelay of their
// previous answer.
func (w *writer) noteAnswered(plans []appendPlan) {
	if w.db.CommitDelay <= 0 {
		return
	}
	r := &w.returns
	now := w.db.Now()
	clear(r.expect)
	r.expecting = 0
	for _, p := range plans {
		src := p.op.batch.Writer
		if last, ok := r.answered[src]; ok && p.op.submitted.Sub(last) <= w.db.CommitDelay {
			r.expect[src]++
			r.expecting++
		}
	}
	for _, p := range plans {
		if src := p.op.batch.Writer; src != "" {
			r.answered[src] = now
		}
	}
	for src, at := range r.answered {
		if now.Sub(at) > w.db.CommitDelay {
			delete(r.answered, src)
		}
	}
	r.answeredAt = now
}
