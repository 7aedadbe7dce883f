package stream_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ducktail/ducktail/stream"
)

// TestHeartbeatsAndLifetimes runs the session's timers on synctest's fake clock: a
// heartbeat after each idle HeartbeatInterval, none while batches flow, and the idle
// timeout, max stream age and token expiry each ending the stream with its terminal event.
func TestHeartbeatsAndLifetimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(h *stream.Hub) {
			h.HeartbeatInterval = 15 * time.Second
			h.IdleTimeout = 100 * time.Second
			h.MaxStreamAge = 0
		})
		s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
		ctx := context.Background()
		start := time.Now()
		mustEvent := func(want string, at time.Duration) {
			t.Helper()
			fr, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			e := parseFrame(t, fr.Bytes)
			if e.event != want || time.Since(start) != at {
				t.Fatalf("got %s at %v, want %s at %v", e.event, time.Since(start), want, at)
			}
		}
		mustEvent("schema", 0)
		mustEvent("heartbeat", 15*time.Second)
		mustEvent("heartbeat", 30*time.Second)
		time.Sleep(5 * time.Second)
		f.ingest(t, 1, 1)
		mustEvent("batch", 35*time.Second)
		mustEvent("heartbeat", 50*time.Second)
		// Idle since the batch at 35 s: the idle timeout ends the stream at 135 s.
		for _, at := range []time.Duration{65, 80, 95, 110, 125} {
			mustEvent("heartbeat", at*time.Second)
		}
		mustEvent("reconnect", 135*time.Second)
	})
}

func TestMaxStreamAgeAndTokenExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(h *stream.Hub) {
			h.HeartbeatInterval = time.Hour
			h.IdleTimeout = 0
			h.MaxStreamAge = 100 * time.Second
		})
		s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
		ctx := context.Background()
		start := time.Now()
		s.Next(ctx)
		fr, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e := parseFrame(t, fr.Bytes); e.event != "reconnect" || !strings.Contains(e.data, "max_stream_age") {
			t.Fatalf("got %+v", e)
		}
		if age := time.Since(start); age < 90*time.Second || age > 100*time.Second {
			t.Fatalf("max stream age fired at %v, want 90–100 s (10%% jitter)", age)
		}

		f.tok.ExpiresAt = time.Now().Add(30 * time.Second)
		s2 := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
		start = time.Now()
		s2.Next(ctx)
		fr, _ = s2.Next(ctx)
		if e := parseFrame(t, fr.Bytes); e.event != "failure" || !strings.Contains(e.data, `"code":"token_expired"`) || time.Since(start) != 30*time.Second {
			t.Fatalf("got %+v after %v", e, time.Since(start))
		}
	})
}

// TestLifetimesEndBusyStreams: token expiry and max stream age end a stream that never
// waits because batches keep coming.
func TestLifetimesEndBusyStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(h *stream.Hub) {
			h.HeartbeatInterval = time.Hour
			h.MaxStreamAge = 0
		})
		f.tok.ExpiresAt = time.Now().Add(5 * time.Second)
		s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
		s.Next(context.Background())
		for i := 0; ; i++ {
			time.Sleep(time.Second)
			f.ingest(t, i, 1)
			synctest.Wait()
			fr, err := s.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if e := parseFrame(t, fr.Bytes); e.event == "failure" {
				if !strings.Contains(e.data, "token_expired") || i < 4 || i > 5 {
					t.Fatalf("at %d s: %+v", i+1, e)
				}
				return
			}
			if i > 10 {
				t.Fatal("a busy stream outlived its token")
			}
		}
	})
}
