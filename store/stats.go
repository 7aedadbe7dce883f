package store

import (
	"sync"
	"sync/atomic"
)

// Stats is a point-in-time view of the store's resources, for metrics and health.
type Stats struct {
	// WALBytes is the size of the write-ahead log file as the writer last saw it, in bytes.
	WALBytes int64
	// Checkpoints and CheckpointsFailed count CHECKPOINTs run by the writer since Open,
	// by outcome; LastCheckpointError is the reason of the last failure while the
	// failures last, else "".
	Checkpoints         int64
	CheckpointsFailed   int64
	LastCheckpointError string
	// ReadersBusy is how many read connections are in use; ReadConns bounds it.
	ReadersBusy int
	ReadConns   int
	// WriterQueue is how many writes wait for the writer.
	WriterQueue int
	// Commits counts the appends committed since Open, and CommitTransactions the DuckDB
	// transactions that committed them: their ratio is the mean size of a group commit
	// (docs/design.md, "Storage model").
	Commits            int64
	CommitTransactions int64
}

// storeStats holds the counters behind Stats that the writer updates.
type storeStats struct {
	walBytes          atomic.Int64
	checkpoints       atomic.Int64
	checkpointsFailed atomic.Int64
	commits           atomic.Int64
	commitTxs         atomic.Int64
	mu                sync.Mutex
	checkpointError   string
}

// Stats returns the store's current Stats. It is cheap and safe for concurrent use; after
// Close it returns the last values.
func (db *DB) Stats() Stats {
	s := Stats{
		WALBytes:           db.stats.walBytes.Load(),
		Checkpoints:        db.stats.checkpoints.Load(),
		CheckpointsFailed:  db.stats.checkpointsFailed.Load(),
		Commits:            db.stats.commits.Load(),
		CommitTransactions: db.stats.commitTxs.Load(),
		ReadConns:          db.ReadConns,
	}
	db.stats.mu.Lock()
	s.LastCheckpointError = db.stats.checkpointError
	db.stats.mu.Unlock()
	if db.sqlDB != nil {
		// The writer holds one connection for its whole life.
		s.ReadersBusy = max(db.sqlDB.Stats().InUse-1, 0)
	}
	if db.writer != nil {
		s.WriterQueue = len(db.writer.ops)
	}
	return s
}

func (db *DB) setCheckpointError(reason string) {
	db.stats.mu.Lock()
	db.stats.checkpointError = reason
	db.stats.mu.Unlock()
}
