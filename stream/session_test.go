package stream_test

import (
	"fmt"
	"testing"

	"github.com/ducktail/ducktail/stream"
)

// TestBufferedTakesWhatTheLogHolds: once a session returned every frame it made, Buffered
// still reports the commits its table's log already holds, so that they join the caller's
// write, and Next then returns them in order without waiting; with nothing more in the
// log, nothing is buffered.
func TestBufferedTakesWhatTheLogHolds(t *testing.T) {
	f := newFixture(t, nil)
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	if e := parseFrame(t, next(t, s).Bytes); e.event != "schema" {
		t.Fatalf("first event = %+v, want schema", e)
	}
	if s.Buffered() {
		t.Fatal("Buffered with nothing committed")
	}
	f.ingest(t, 0, 1)
	if e := parseFrame(t, next(t, s).Bytes); e.event != "batch" {
		t.Fatalf("event = %+v, want batch", e)
	}
	f.ingest(t, 1, 1)
	f.ingest(t, 2, 1)
	for _, want := range []string{"[1]", "[2]"} {
		if !s.Buffered() {
			t.Fatalf("the commit of rows %s, in the log, is not buffered", want)
		}
		e := parseFrame(t, next(t, s).Bytes)
		if _, ns := decodeIPC(t, e.data); e.event != "batch" || fmt.Sprint(ns) != want {
			t.Fatalf("event = %s rows %v, want batch %s", e.event, ns, want)
		}
	}
	if s.Buffered() {
		t.Fatal("Buffered with the log read through")
	}
}
