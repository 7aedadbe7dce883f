package client_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/api/client"
)

// collector is a model application: it keeps the n column of the rows it was handed
// (a snapshot replaces them, a batch appends to them) and the cursor of the last event
// it processed, and records every status and error. It is what every test compares with
// the table.
type collector struct {
	mu        sync.Mutex
	rows      []int64
	cursor    string
	batches   int
	snapshots []string // the Reason of each snapshot
	statuses  []client.Status
	errs      []error
	// onBatch, when set, runs at the start of every OnBatch (a slow or failing consumer).
	onBatch func(b client.Batch) error
}

// options returns stream options reporting to c, with the short intervals of the tests:
// the server heartbeats every heartbeat, and a silence of heartbeat+margin is a dead
// connection.
func (c *collector) options(table string, framing client.Framing, heartbeat time.Duration) client.Options {
	return client.Options{
		Table:             table,
		Framing:           framing,
		OnSchema:          c.schema,
		OnBatch:           c.batch,
		OnStatus:          c.status,
		OnError:           c.error,
		HeartbeatInterval: heartbeat,
		HeartbeatMargin:   400 * time.Millisecond,
		MinBackoff:        time.Millisecond,
		MaxBackoff:        20 * time.Millisecond,
		StableAfter:       time.Second,
	}
}

// live returns LiveQuery options starting with a snapshot.
func (c *collector) live(table string, framing client.Framing, heartbeat time.Duration) client.LiveOptions {
	return client.LiveOptions{Options: c.options(table, framing, heartbeat), StartWithSnapshot: true, OnSnapshot: c.snapshot}
}

func (c *collector) schema(s client.SchemaChange) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cursor = s.Cursor
	return nil
}

func (c *collector) batch(b client.Batch) error {
	if c.onBatch != nil {
		if err := c.onBatch(b); err != nil {
			return err
		}
	}
	ns, err := nColumn(b.Schema, b.Records)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = append(c.rows, ns...)
	c.cursor = b.Cursor
	c.batches++
	return nil
}

func (c *collector) snapshot(s client.Snapshot) error {
	ns, err := nColumn(s.Schema, s.Records)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = ns
	c.cursor = s.Cursor
	c.snapshots = append(c.snapshots, s.Reason)
	return nil
}

func (c *collector) status(s client.Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statuses = append(c.statuses, s)
}

func (c *collector) error(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

// at reports whether the last processed cursor is cursor.
func (c *collector) at(cursor string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursor == cursor
}

func (c *collector) state() (rows []int64, errs []error, statuses []client.Status, snapshots []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.rows), slices.Clone(c.errs), slices.Clone(c.statuses), slices.Clone(c.snapshots)
}

// countErrors returns how many reported errors match is.
func (c *collector) countErrors(is func(error) bool) int {
	_, errs, _, _ := c.state()
	n := 0
	for _, err := range errs {
		if is(err) {
			n++
		}
	}
	return n
}

// nColumn returns the int64 column "n" of recs.
func nColumn(s *arrow.Schema, recs []arrow.RecordBatch) ([]int64, error) {
	idx := s.FieldIndices("n")
	if len(idx) != 1 {
		return nil, errors.New("no column n in " + s.String())
	}
	var out []int64
	for _, r := range recs {
		out = append(out, r.Column(idx[0]).(*array.Int64).Int64Values()...)
	}
	return out, nil
}

// checkExact fails unless the collector holds exactly the table's rows, in commit order:
// nothing missing, nothing twice.
func checkExact(t testing.TB, e *env, c *collector, table string) {
	t.Helper()
	got, _, _, _ := c.state()
	want := e.tableNs(table)
	if !slices.Equal(got, want) {
		t.Fatalf("client holds %d rows, table has %d: got %v, want %v", len(got), len(want), got, want)
	}
	if len(want) == 0 {
		t.Fatal("the table is empty: the test would prove nothing")
	}
}

// catchUp waits until the collector processed the table's head.
func catchUp(t testing.TB, e *env, c *collector, table string) {
	t.Helper()
	head := e.head(table)
	deadline := time.Now().Add(30 * time.Second)
	for !c.at(head) {
		if time.Now().After(deadline) {
			rows, errs, statuses, snapshots := c.state()
			t.Fatalf("the client did not reach the table's head %s: it is at %s with %d rows (table: %d), snapshots %q, statuses %v, last errors %v",
				head, c.cursor, len(rows), len(e.tableNs(table)), snapshots, statuses[max(0, len(statuses)-6):], errs[max(0, len(errs)-6):])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
