package client

import (
	"io"
	"time"
)

// watchdog cancels a connection that stays silent for longer than its limit (docs/design.md,
// "Heartbeats and timeouts"). It is armed only while the consumer waits for bytes (for the
// response headers, or inside a body Read), never while a handler runs, so a slow handler
// is not mistaken for a dead server. Its timer's function runs on the runtime's timer
// goroutine; stop disarms it for good.
type watchdog struct {
	limit time.Duration
	timer *time.Timer
}

// newWatchdog returns a disarmed watchdog calling onSilence when armed for longer than
// limit.
func newWatchdog(limit time.Duration, onSilence func()) *watchdog {
	w := &watchdog{limit: limit, timer: time.AfterFunc(time.Hour, onSilence)}
	w.timer.Stop()
	return w
}

func (w *watchdog) arm()    { w.timer.Reset(w.limit) }
func (w *watchdog) disarm() { w.timer.Stop() }

// reader returns r with the watchdog armed during each Read.
func (w *watchdog) reader(r io.Reader) io.Reader { return watchedReader{r: r, w: w} }

type watchedReader struct {
	r io.Reader
	w *watchdog
}

func (wr watchedReader) Read(p []byte) (int, error) {
	wr.w.arm()
	defer wr.w.disarm()
	return wr.r.Read(p)
}
