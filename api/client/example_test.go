package client_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/api/client"
	"github.com/ducktail/ducktail/store"
)

// ExampleStream starts a real ducktail server on loopback (openStack, in env_test.go),
// follows a table with Stream, ingests two commits once the stream is live, and prints
// each row as the client receives it.
func ExampleStream() {
	dir, err := os.MkdirTemp("", "ducktail-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv, err := openStack(filepath.Join(dir, "ducktail.duckdb"), "127.0.0.1:0", envOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.close(false)
	_, token, err := srv.db.CreateToken(context.Background(), store.PurposeAdmin, "", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	baseURL := srv.URL()

	post := func(path, contentType, body string) {
		req, _ := http.NewRequest("POST", baseURL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
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
	live := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-live:
		case <-ctx.Done():
			return
		}
		post("/v1/tables/weather/rows", "application/x-ndjson",
			"{\"city\":\"Seattle\",\"temp_c\":7.2}\n{\"city\":\"Portland\",\"temp_c\":9.1}\n")
		post("/v1/tables/weather/rows", "text/csv", "city,temp_c\nSeattle,8\n")
	}()

	rows := 0
	err = client.Stream(ctx, baseURL, token, client.Options{
		Table: "weather",
		OnStatus: func(s client.Status) {
			fmt.Println("status:", s)
			if s == client.Live {
				select {
				case live <- struct{}{}:
				default:
				}
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
	wg.Wait()
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
