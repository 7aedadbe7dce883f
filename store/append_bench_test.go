package store_test

import (
	"context"
	"testing"
)

// BenchmarkAppendSmall measures in-process 100-row commits (no HTTP): the store's share
// of an ingest's latency.
func BenchmarkAppendSmall(b *testing.B) {
	db, _ := openDB(b, "")
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, "weather", weatherColumns); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		appendRows(b, db, "weather", 100, 1)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
