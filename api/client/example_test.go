package client_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/api/client"
)

// ExampleStream follows a table of a running ducktail server with Stream, ingests two
// commits once the stream is live, and prints each row as the client receives it. The
// server, an admin token and its certificate come from the environment, as the command
// line reads them (DUCKTAIL_SERVER, DUCKTAIL_TOKEN, DUCKTAIL_CA_CERT); under `make run`
// they are https://localhost:8443, data/admin.token and data/tls/cert.pem. `go test`
// runs it against a real server its TestMain starts.
func ExampleStream() {
	server, token, caFile := os.Getenv("DUCKTAIL_SERVER"), os.Getenv("DUCKTAIL_TOKEN"), os.Getenv("DUCKTAIL_CA_CERT")
	// The same trust for the plain requests of this example.
	hc, err := client.NewHTTPClient(caFile)
	if err != nil {
		fmt.Println(err)
		return
	}
	post := func(path, contentType, body string) {
		req, _ := http.NewRequest("POST", server+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", contentType)
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}
	post("/v1/tables", "application/json",
		`{"name":"weather","columns":[{"name":"city","type":"VARCHAR"},{"name":"temp_c","type":"DOUBLE"}]}`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows := 0
	err = client.Stream(ctx, server, token, client.Options{
		Table:  "weather",
		CAFile: caFile,
		OnStatus: func(s client.Status) {
			fmt.Println("status:", s)
			if s == client.Live {
				// A stream starts now, after the rows visible when it opened: commit some.
				go func() {
					post("/v1/tables/weather/rows", "application/x-ndjson",
						"{\"city\":\"Seattle\",\"temp_c\":7.2}\n{\"city\":\"Portland\",\"temp_c\":9.1}\n")
					post("/v1/tables/weather/rows", "text/csv", "city,temp_c\nSeattle,8\n")
				}()
			}
		},
		OnBatch: func(b client.Batch) error {
			// b.Cursor is where to resume after this commit: persist it with the work
			// done, and pass it as Options.Cursor to start again from here.
			for _, rec := range b.Records {
				city := rec.Column(0).(*array.String)
				temp := rec.Column(1).(*array.Float64)
				for i := range int(rec.NumRows()) {
					fmt.Printf("%s %.1f\n", city.Value(i), temp.Value(i))
					rows++
				}
			}
			if rows == 3 {
				cancel()
			}
			return nil
		},
	})
	fmt.Println("Stream returned:", err)
	// Output:
	// status: connecting
	// status: live
	// Seattle 7.2
	// Portland 9.1
	// Seattle 8.0
	// status: closed
	// Stream returned: context canceled
}

// ExampleLiveQuery is the program of docs/consuming.md, "In Go": it reads the table
// first (OnSnapshot: the rows so far and the cursor they end at), then every commit after
// it (OnBatch), with nothing missed or repeated between the two, and would read a fresh
// snapshot if the table were reset. Like ExampleStream it takes the server, a token and
// the certificate from the environment.
func ExampleLiveQuery() {
	server, token, caFile := os.Getenv("DUCKTAIL_SERVER"), os.Getenv("DUCKTAIL_TOKEN"), os.Getenv("DUCKTAIL_CA_CERT")
	hc, err := client.NewHTTPClient(caFile)
	if err != nil {
		fmt.Println(err)
		return
	}
	post := func(path, body string) {
		req, _ := http.NewRequest("POST", server+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "text/csv")
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}
	// Two rows before the program starts; ?create=true makes the table from them.
	post("/v1/tables/readings/rows?create=true", "station,temp_c\nSEA,7.5\nPDX,9.0\n")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	show := func(what string, b client.Batch) {
		for _, rec := range b.Records {
			station := rec.Column(0).(*array.String)
			temp := rec.Column(1).(*array.Float64)
			for i := range int(rec.NumRows()) {
				fmt.Printf("%s: %s %.1f\n", what, station.Value(i), temp.Value(i))
			}
		}
	}
	err = client.LiveQuery(ctx, server, token, client.LiveOptions{
		Options: client.Options{
			Table:  "readings",
			CAFile: caFile,
			OnStatus: func(s client.Status) {
				if s == client.Live {
					go post("/v1/tables/readings/rows", "station,temp_c\nSEA,8.4\n")
				}
			},
			OnBatch: func(b client.Batch) error {
				show("batch", b)
				cancel() // one commit is enough for the example
				return nil
			},
		},
		StartWithSnapshot: true,
		OnSnapshot: func(s client.Snapshot) error {
			// Replace everything built so far with s.Records; s.Cursor is where it ends.
			show("snapshot", client.Batch{Cursor: s.Cursor, Schema: s.Schema, Records: s.Records})
			return nil
		},
	})
	fmt.Println("LiveQuery returned:", err)
	// Output:
	// snapshot: SEA 7.5
	// snapshot: PDX 9.0
	// batch: SEA 8.4
	// LiveQuery returned: context canceled
}
