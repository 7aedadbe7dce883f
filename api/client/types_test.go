package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/api/client"
	"github.com/ducktail/ducktail/valuetext"
)

// TestEveryTypeReadsBack has LiveQuery read a table of every column type
// (testdata/every-type.json): the snapshot and the batch after it decode, through the
// client, to the values the server's JSON snapshot holds.
func TestEveryTypeReadsBack(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/every-type.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Columns      []struct{ Name, Type string }
		Row          json.RawMessage
		SnapshotJSON string `json:"snapshot_json"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	var row bytes.Buffer
	if err := json.Compact(&row, f.Row); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{})
	create, _ := json.Marshal(map[string]any{"name": "every", "columns": f.Columns})
	if status, b := e.do("POST", "/v1/tables", create); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, b)
	}
	ingest := func() {
		if status, b := e.do("POST", "/v1/tables/every/rows", row.Bytes(), "Content-Type: application/x-ndjson"); status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", status, b)
		}
	}
	ingest()
	var mu sync.Mutex
	var snapshot, batch []string
	o := client.LiveOptions{Options: client.Options{Table: "every", OnBatch: func(b client.Batch) error {
		mu.Lock()
		defer mu.Unlock()
		batch = append(batch, jsonRows(b.Schema, b.Records)...)
		return nil
	}}, StartWithSnapshot: true, OnSnapshot: func(s client.Snapshot) error {
		mu.Lock()
		defer mu.Unlock()
		snapshot = jsonRows(s.Schema, s.Records)
		return nil
	}}
	r := run(t, func(ctx context.Context) error { return client.LiveQuery(ctx, e.URL(), e.admin, o) })
	eventually(t, "the snapshot", func() bool { mu.Lock(); defer mu.Unlock(); return snapshot != nil })
	ingest()
	eventually(t, "the batch", func() bool { mu.Lock(); defer mu.Unlock(); return len(batch) > 0 })
	r.stop()
	if strings.Join(snapshot, "\n") != f.SnapshotJSON || strings.Join(batch, "\n") != f.SnapshotJSON {
		t.Fatalf("decoded\nsnapshot %v\nbatch    %v\nwant     %s", snapshot, batch, f.SnapshotJSON)
	}
}

// jsonRows renders records as JSON objects with valuetext, the server's value encoder.
func jsonRows(s *arrow.Schema, recs []arrow.RecordBatch) []string {
	var out []string
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			b := []byte{'{'}
			for j, f := range s.Fields() {
				if j > 0 {
					b = append(b, ',')
				}
				b = valuetext.AppendJSONValue(append(valuetext.AppendJSONString(b, f.Name), ':'), rec.Column(j), i, false)
			}
			out = append(out, string(append(b, '}')))
		}
	}
	return out
}
