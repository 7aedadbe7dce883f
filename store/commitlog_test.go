package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ducktail/ducktail/store"
)

// TestCommitLogOfSmallGroups commits 8 one-row batches at once, half of them with an
// Idempotency-Key, so that the writer groups keyed and unkeyed commits as it finds them
// (small groups write their commit-log rows with one prepared INSERT, keyed rows first),
// and checks the log: every seq once, in order, with its rows, size and time; every key
// found again by a retry, answering its own commit.
func TestCommitLogOfSmallGroups(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	info, err := db.CreateTable(ctx, "weather", weatherColumns)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(i int) store.Batch {
		b := store.Batch{Table: "weather", SchemaVersion: info.Schema.Version, Record: weatherBatch(info.Schema, 1, float64(i)), Bytes: 10}
		if i%2 == 0 {
			b.IdempotencyKey, b.RequestHash = fmt.Sprint("key-", i), []byte(fmt.Sprint("hash-", i))
		}
		return b
	}
	const n = 8
	seqs := make([]int64, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := db.Append(ctx, batch(i))
			if err != nil {
				t.Error(err)
			}
			seqs[i] = c.Position.Seq
		})
	}
	close(start)
	wg.Wait()
	for i := 0; i < n; i += 2 {
		c, err := db.Append(ctx, batch(i))
		if err != nil || !c.Duplicate || c.Position.Seq != seqs[i] {
			t.Fatalf("the retry of key-%d = %+v, %v; want seq %d, a duplicate", i, c, err, seqs[i])
		}
		c, found, err := db.IdempotentCommit(ctx, "weather", fmt.Sprint("key-", i), []byte(fmt.Sprint("hash-", i)))
		if err != nil || !found || c.Position.Seq != seqs[i] {
			t.Fatalf("IdempotentCommit(key-%d) = %+v, %v, %v; want seq %d", i, c, found, err, seqs[i])
		}
	}
	if _, found, _ := db.IdempotentCommit(ctx, "weather", "key-1", nil); found {
		t.Fatal("an unkeyed commit was logged under a key")
	}
	info, _ = db.Table("weather")
	var log []store.CommitInfo
	err = db.Read(ctx, func(tx *store.ReadTx) error {
		a, err := tx.Activation(ctx, info.ID, info.Head.Activation)
		if err != nil {
			return err
		}
		log, err = tx.Commits(ctx, a, 0, info.Head.Seq)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != n {
		t.Fatalf("the log holds %d commits, want %d: %+v", len(log), n, log)
	}
	for i, c := range log {
		if c.Seq != int64(i+1) || c.Rows != 1 || c.Bytes < 10 || c.SchemaVersion != info.Schema.Version || c.CommittedAt.IsZero() {
			t.Fatalf("commit %d of the log = %+v", i, c)
		}
	}
}
