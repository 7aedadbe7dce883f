package jetstream_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/internal/natstest"
	"github.com/ducktail/ducktail/jetstream"
)

// BenchmarkPublishLag ingests b.N one-row commits over HTTP, one at a time, into a writer
// publishing to a single-node JetStream server, and reports the publisher's throughput:
// ns/op is the time per commit from the first ingest until JetStream acknowledged the
// last, and lag-ms the wait after the last ingest's acknowledgement until the stream
// had it (polled every millisecond).
func BenchmarkPublishLag(b *testing.B) {
	ns := natstest.New(b, "n1", 0)
	ns.Start()
	nc := connect(b, ns.URL())
	w := openWriter(b, filepath.Join(b.TempDir(), "ducktail.duckdb"), nc, 0, 1, nil)
	c := w.http
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`)
	subject := jetstream.TableSubject(jetstream.DefaultSubjectPrefix, 1)
	b.ResetTimer()
	for i := range b.N {
		c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, i))
	}
	acked := time.Now()
	js, err := njs.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	last := strconv.Itoa(b.N)
	for {
		s, err := js.Stream(ctx, jetstream.DefaultStream)
		if err != nil {
			b.Fatal(err)
		}
		if m, err := s.GetLastMsgForSubject(ctx, subject); err == nil && m.Header.Get(jetstream.HeaderSeq) == last {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(time.Since(acked).Microseconds())/1000, "lag-ms")
}
