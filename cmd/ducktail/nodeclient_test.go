package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api"
)

// nodeEvent is one line of web/test/client.mjs: an event as the Node.js client decoded it.
type nodeEvent struct {
	Event  string
	ID     string
	Data   string
	Fields []struct {
		Name     string
		Type     string
		Nullable bool
	}
	NumRows int `json:"num_rows"`
	Rows    []map[string]any
}

// TestNodeEventSourceClient has a consumer nobody here wrote read the stream: Node.js
// with the npm packages eventsource (subscribing to /stream/{token} over TLS, trusting
// the self-signed certificate) and apache-arrow (tableFromIPC). It must decode the
// schema-only payload and every batch, including a zero-row commit, into exactly what
// was ingested, with each batch's id the commit's cursor and nothing from before the
// subscription.
func TestNodeEventSourceClient(t *testing.T) {
	node, web := needNode(t, requireNodeEnv, "eventsource", "apache-arrow")
	st := startStack(t)
	create := `{"name":"readings","columns":[{"name":"id","type":"BIGINT"},{"name":"station","type":"VARCHAR"},
		{"name":"temp","type":"DOUBLE"},{"name":"amount","type":"DECIMAL(9,2)"},{"name":"day","type":"DATE"},
		{"name":"at","type":"TIMESTAMPTZ"},{"name":"ok","type":"BOOLEAN"}]}`
	if status, body := st.do(t, "POST", "/v1/tables", "application/json", []byte(create)); status != http.StatusCreated {
		t.Fatalf("create table: status %d: %s", status, body)
	}
	baseline := st.ingest(t, "readings", "application/json", []byte(`[{"id":0,"station":"before"}]`))
	token := st.streamToken(t, "readings")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(web, "test", "client.mjs"))
	cmd.Env = append(cmd.Environ(),
		"DUCKTAIL_STREAM_URL="+st.URL()+"/stream/"+token,
		"DUCKTAIL_BATCHES=3",
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
	events := make(chan nodeEvent)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var ev nodeEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = nodeEvent{Event: "unreadable", Data: sc.Text()}
			}
			events <- ev
		}
	}()
	next := func() nodeEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the Node.js client exited: %v\n%s", cmd.Wait(), stderr.String())
			}
			return ev
		case <-ctx.Done():
			t.Fatalf("no event from the Node.js client\n%s", stderr.String())
		}
		return nodeEvent{}
	}

	// The schema-only payload comes first, its id the baseline: the subscription starts
	// after the rows committed before it.
	ev := next()
	if ev.Event != "schema" || ev.ID != baseline || ev.NumRows != 0 {
		t.Fatalf("first event %+v, want schema with id %s and no rows", ev, baseline)
	}
	wantFields := []string{"id Int64", "station Utf8", "temp Float64", "amount Decimal[9e+2]", "day Date32<DAY>", "at Timestamp<MICROSECOND, UTC>", "ok Bool"}
	var gotFields []string
	for _, f := range ev.Fields {
		gotFields = append(gotFields, f.Name+" "+f.Type)
	}
	if !reflect.DeepEqual(gotFields, wantFields) {
		t.Errorf("schema fields %q, want %q", gotFields, wantFields)
	}

	commits := []struct {
		body string
		rows []map[string]any
	}{
		{
			`[{"id":9007199254740993,"station":"Sea-Tac ☔","temp":-3.5,"amount":-12.05,"day":"2016-01-01","at":"2016-01-01T12:30:00.25Z","ok":true},
			  {"id":2,"station":"Boeing Field","temp":0,"amount":0.5,"day":"1969-12-31","at":"1970-01-01T00:00:00Z","ok":false},
			  {"id":3}]`,
			[]map[string]any{
				{"id": "9007199254740993", "station": "Sea-Tac ☔", "temp": -3.5, "amount": "-12.05", "day": "2016-01-01", "at": "2016-01-01T12:30:00.250Z", "ok": true},
				{"id": "2", "station": "Boeing Field", "temp": 0.0, "amount": "0.50", "day": "1969-12-31", "at": "1970-01-01T00:00:00.000Z", "ok": false},
				{"id": "3", "station": nil, "temp": nil, "amount": nil, "day": nil, "at": nil, "ok": nil},
			},
		},
		{`[]`, []map[string]any{}},
		{
			`[{"id":-4,"station":"","temp":1e300,"amount":9999999.99,"day":"2100-02-28","at":"2099-12-31T23:59:59.999Z","ok":true}]`,
			[]map[string]any{
				{"id": "-4", "station": "", "temp": 1e300, "amount": "9999999.99", "day": "2100-02-28", "at": "2099-12-31T23:59:59.999Z", "ok": true},
			},
		},
	}
	for i, c := range commits {
		cursor := st.ingest(t, "readings", "application/json", []byte(c.body))
		ev := next()
		if ev.Event != "batch" || ev.ID != cursor {
			t.Fatalf("commit %d: event %+v, want batch with id %s", i, ev, cursor)
		}
		if ev.NumRows != len(c.rows) || !reflect.DeepEqual(ev.Rows, c.rows) {
			t.Errorf("commit %d: the Node.js client decoded %d rows %v, want %v", i, ev.NumRows, ev.Rows, c.rows)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the Node.js client: %v\n%s", err, stderr.String())
	}
}
