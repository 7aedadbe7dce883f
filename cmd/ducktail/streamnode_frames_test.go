package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// TestNodesSameFramesAsWriter reads one table from the empty table's cursor on the
// writer and on a stream node, in each framing (SSE, NDJSON, JSON-seq) and encoding
// (Arrow IPC, JSON), across two replayed commits, then, once every stream has started,
// live commits and a column added between two of them, then a heartbeat (both servers
// with --heartbeat-interval 500ms): the node sends the same records as the writer, in
// the same order, the same bytes for JSON data and heartbeats, and the same schema and
// rows for Arrow IPC data.
func TestNodesSameFramesAsWriter(t *testing.T) {
	heartbeat := []string{"--heartbeat-interval", "500ms"}
	tp := startTopology(t, topologyConfig{nodes: 1, writerFlags: heartbeat, nodeFlags: heartbeat})
	w := tp.client(tp.writer)
	start := w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	l := newLedger()
	w.mustIngest(t, l, "t", 0, 1, 2)
	w.mustIngest(t, l, "t", 1, 3)

	type read struct {
		framing, encoding, server string
		started                   chan struct{}
		records                   chan []string
	}
	var reads []*read
	for _, framing := range []string{"text/event-stream", "application/x-ndjson", "application/json-seq"} {
		for _, encoding := range []string{"arrow", "json"} {
			for _, p := range []*serveProcess{tp.writer, tp.nodes[0]} {
				r := &read{framing: framing, encoding: encoding, server: p.name, started: make(chan struct{}), records: make(chan []string, 1)}
				reads = append(reads, r)
				go func() { r.records <- readRecords(t, p.URL, token, framing, encoding, start, 5, r.started) }()
			}
		}
	}
	for _, r := range reads {
		select {
		case <-r.started:
		case <-time.After(3 * time.Minute):
			t.Fatalf("%s %s on %s: no record", r.framing, r.encoding, r.server)
		}
	}
	w.mustIngest(t, l, "t", 0, 4)
	w.must(t, http.StatusCreated, "POST", "/v1/tables/t/columns", "application/json", `{"name":"x","type":"VARCHAR"}`)
	w.mustIngest(t, l, "t", 1, 5)
	w.mustIngest(t, l, "t", 0, 6)
	for i := 0; i < len(reads); i += 2 {
		writer, node := reads[i], reads[i+1]
		want, got := <-writer.records, <-node.records
		what := writer.framing + " " + writer.encoding
		if len(got) != len(want) {
			t.Errorf("%s: %d records from the node, %d from the writer:\nnode:   %q\nwriter: %q", what, len(got), len(want), got, want)
			continue
		}
		for j := range want {
			if err := sameRecord(want[j], got[j], writer.encoding); err != nil {
				t.Errorf("%s: record %d: %v\nnode:   %q\nwriter: %q", what, j, err, got[j], want[j])
			}
		}
	}
}

// readRecords opens a stream of table t on server from cursor in framing (an Accept
// value) and encoding, and returns its records up to and with the batches-th batch, then
// the first heartbeat after it; other heartbeats are left out. SSE events are their
// lines (the preamble left out), NDJSON and JSON-seq records their JSON. It closes
// started at the first record.
func readRecords(t testing.TB, server, token, framing, encoding, cursor string, batches int, started chan struct{}) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", server+"/v1/tables/t/stream?encoding="+encoding+"&cursor="+cursor, nil)
	if err != nil {
		t.Error(err)
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", framing)
	resp, err := nodesHTTP.Do(req)
	if err != nil {
		t.Errorf("%s: %v", server, err)
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != framing {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("%s %s: status %d, Content-Type %q: %s", server, framing, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		return nil
	}
	br := bufio.NewReader(resp.Body)
	var out []string
	var event []string
	for seen := 0; ; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Errorf("%s %s: after %q: %v", server, framing, out, err)
			return out
		}
		line = strings.TrimSuffix(line, "\n")
		if framing == "application/json-seq" {
			// RFC 7464: RS, the JSON text, LF.
			if line, _ = strings.CutPrefix(line, "\x1e"); !strings.HasPrefix(line, "{") {
				t.Errorf("%s %s: a record without RS: %q", server, framing, line)
			}
		}
		switch {
		case framing == "text/event-stream" && line != "":
			event = append(event, line)
			continue
		case framing == "text/event-stream":
			// The preamble (a comment and a jittered retry field) is no event.
			line, event = strings.Join(event, "\n"), nil
			if !strings.Contains(line, "event: ") {
				continue
			}
		case line == "":
			continue
		}
		if isEvent(line, "heartbeat") {
			if seen == batches {
				return append(out, line)
			}
			continue
		}
		if isEvent(line, "batch") {
			seen++
		}
		if out = append(out, line); len(out) == 1 {
			close(started)
		}
	}
}

// isEvent reports whether record (an SSE event's lines or a JSON record) is an event
// named event.
func isEvent(record, event string) bool {
	return strings.HasPrefix(record, "event: "+event+"\n") || strings.HasPrefix(record, `{"event":"`+event+`"`)
}

// sameRecord returns why node's record is not writer's: the same bytes, or for Arrow
// IPC data the same event, id, schema and rows in bytes that may differ.
func sameRecord(writer, node, encoding string) error {
	if writer == node {
		return nil
	}
	if encoding != "arrow" {
		return fmt.Errorf("not the same bytes")
	}
	we, wid, wdata := recordFields(writer)
	ne, nid, ndata := recordFields(node)
	if we != ne || wid != nid {
		return fmt.Errorf("event %q id %q, the writer's %q %q", ne, nid, we, wid)
	}
	wr, err1 := decodeIPC(wdata)
	nr, err2 := decodeIPC(ndata)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("Arrow IPC: writer %v, node %v", err1, err2)
	}
	if !wr.schema.Equal(nr.schema) || len(wr.recs) != len(nr.recs) {
		return fmt.Errorf("schema %v, %d records; the writer's %v, %d", nr.schema, len(nr.recs), wr.schema, len(wr.recs))
	}
	for i := range wr.recs {
		if !array.RecordEqual(wr.recs[i], nr.recs[i]) {
			return fmt.Errorf("record batch %d: %v, the writer's %v", i, nr.recs[i], wr.recs[i])
		}
	}
	return nil
}

// recordFields returns the event, id and data of an SSE event or a JSON record.
func recordFields(r string) (event, id, data string) {
	if !strings.HasPrefix(r, "{") {
		for l := range strings.SplitSeq(r, "\n") {
			k, v, _ := strings.Cut(l, ": ")
			switch k {
			case "event":
				event = v
			case "id":
				id = v
			case "data":
				data = v
			}
		}
		return event, id, data
	}
	var rec struct{ Event, ID, Data string }
	json.Unmarshal([]byte(r), &rec)
	return rec.Event, rec.ID, rec.Data
}

// ipcStream is a decoded Arrow IPC stream.
type ipcStream struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

func decodeIPC(b64 string) (ipcStream, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return ipcStream{}, err
	}
	r, err := ipc.NewReader(bytes.NewReader(raw))
	if err != nil {
		return ipcStream{}, err
	}
	defer r.Release()
	s := ipcStream{schema: r.Schema()}
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		s.recs = append(s.recs, rec)
	}
	return s, r.Err()
}
