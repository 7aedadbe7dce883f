package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
)

// TestNodesSnapshotHandOff takes snapshots while a producer commits, and three commits
// after each, from the writer and through each stream node (which proxies them to the writer), and subscribes at once on
// a stream node with each snapshot's cursor: the snapshot's rows and the stream's
// batches together are every acknowledged commit exactly once (the stream starts right
// after the snapshot, even when the node had not yet received the snapshot's last
// commit). A cursor read on a stream node then resumes exactly on the writer and on
// the other node.
func TestNodesSnapshotHandOff(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	servers := append([]*serveProcess{tp.writer}, tp.nodes...)
	w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	l := newLedger()
	produced := make(chan error, 1)
	go func() { produced <- produce(l, []apiClient{w}, "t", 1, 40, 0) }()
	var subs []*subscriber
	snapshots := map[*subscriber][]int64{}
	for i := range 9 {
		from := servers[i%3]
		cursor, rows := snapshotRows(t, tp.client(from), "t")
		s := &subscriber{name: fmt.Sprintf("after-%s-snapshot-%d", from.name, i), servers: []string{tp.nodes[i%2].URL},
			table: "t", token: token, byPath: i%2 == 0, json: i%4 < 2, start: cursor}
		subscribe(t, s)
		subs = append(subs, s)
		snapshots[s] = rows
		for j := range 3 {
			w.mustIngest(t, l, "t", 1, int64(10_000_000+i*10+j))
		}
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	all := l.all(t)
	checkAll(t, subs, all)
	for s, rows := range snapshots {
		var want []int64
		for _, c := range all[:cursorSeq(s.start)] {
			want = append(want, c.rows...)
		}
		slices.Sort(want)
		slices.Sort(rows)
		if !slices.Equal(rows, want) {
			t.Errorf("%s: snapshot at seq %d has rows %v, want those of commits 1…%[2]d: %v", s.name, cursorSeq(s.start), rows, want)
		}
	}

	mid := subs[0].batches[len(subs[0].batches)/2].cursor
	var resumed []*subscriber
	for _, p := range []*serveProcess{tp.writer, tp.nodes[1]} {
		resumed = append(resumed, &subscriber{name: "resumed-on-" + p.name, servers: []string{p.URL}, table: "t", token: token, resume: mid})
	}
	subscribe(t, resumed...)
	waitDelivered(t, resumed, l.last())
	checkAll(t, resumed, all)
}

// snapshotRows reads table's NDJSON snapshot through c and returns its cursor and the n
// of its rows.
func snapshotRows(t testing.TB, c apiClient, table string) (string, []int64) {
	t.Helper()
	req, err := http.NewRequest("GET", c.base+"/v1/tables/"+table+"/snapshot", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := nodesHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("snapshot via %s: status %d: %s", c.base, resp.StatusCode, body.Bytes())
	}
	var rows []int64
	sc := bufio.NewScanner(&body)
	for sc.Scan() {
		var r struct{ N int64 }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("snapshot line %q: %v", sc.Text(), err)
		}
		rows = append(rows, r.N)
	}
	cursor := resp.Header.Get("Ducktail-Cursor")
	if cursorSeq(cursor) < 0 {
		t.Fatalf("snapshot via %s: cursor %q", c.base, cursor)
	}
	return cursor, rows
}
