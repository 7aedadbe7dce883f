package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api"
)

// TestNodeDecodesEveryType has Node.js with apache-arrow (the version the page uses)
// read a table of every column type (testdata/every-type.json) as a batch event and as an
// Arrow snapshot (web/test/types.mjs): every value decodes without throwing, and to the
// values the file lists (web/test/values.mjs's JSON forms).
func TestNodeDecodesEveryType(t *testing.T) {
	node, web := needNode(t, requireNodeEnv, "eventsource", "apache-arrow")
	raw, err := os.ReadFile("../../testdata/every-type.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Columns []struct{ Name, Type string }
		Row     json.RawMessage
		Node    map[string]any
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	var row bytes.Buffer
	if err := json.Compact(&row, f.Row); err != nil {
		t.Fatal(err)
	}
	st := startStack(t)
	create, _ := json.Marshal(map[string]any{"name": "every", "columns": f.Columns})
	if status, body := st.do(t, "POST", "/v1/tables", "application/json", create); status != http.StatusCreated {
		t.Fatalf("create table: status %d: %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(web, "test", "types.mjs"))
	cmd.Env = append(cmd.Environ(),
		"DUCKTAIL_STREAM_URL="+st.URL()+"/stream/"+st.streamToken(t, "every"),
		"DUCKTAIL_SNAPSHOT_URL="+st.URL()+"/v1/tables/every/snapshot",
		"DUCKTAIL_TOKEN="+st.admin,
		"NODE_EXTRA_CA_CERTS="+filepath.Join(st.dir, tlsDir, api.SelfSignedCertFile))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	next := func() (ev struct {
		Event, Data string
		Rows        []map[string]any
	}) {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("the Node.js script exited: %v\n%s", cmd.Wait(), stderr.String())
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Event == "error" {
			t.Fatalf("the Node.js script printed %s (%v)\n%s", sc.Bytes(), err, stderr.String())
		}
		return ev
	}
	if ev := next(); ev.Event != "ready" {
		t.Fatalf("first line %+v, want ready", ev)
	}
	st.ingest(t, "every", "application/x-ndjson", append(row.Bytes(), "\n{}\n"...))
	nulls := map[string]any{}
	for _, c := range f.Columns {
		nulls[c.Name] = nil
	}
	for _, want := range []string{"batch", "snapshot"} {
		ev := next()
		if ev.Event != want || len(ev.Rows) != 2 {
			t.Fatalf("got %s with %d rows, want %s with 2", ev.Event, len(ev.Rows), want)
		}
		for name, v := range f.Node {
			if !reflect.DeepEqual(ev.Rows[0][name], v) {
				t.Errorf("%s: column %s decoded as %#v, want %#v", want, name, ev.Rows[0][name], v)
			}
		}
		if !reflect.DeepEqual(ev.Rows[1], nulls) {
			t.Errorf("%s: the NULL row decoded as %v", want, ev.Rows[1])
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the Node.js script: %v\n%s", err, stderr.String())
	}
}
