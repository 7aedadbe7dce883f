package client

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff is capped exponential backoff with full jitter ("Exponential Backoff And
// Jitter", AWS Architecture Blog, 2015): attempt n waits a uniformly random time in
// [0, min(max, base·2ⁿ)], so that clients cut at the same moment spread out instead of
// returning together (docs/design.md, "Shutdown"). The attempt count is reset by the consumer
// only after a connection held for a while or delivered data (docs/design.md, "Shutdown"), so a server that accepts and closes at once cannot pin it at short delays.
type backoff struct {
	base, max time.Duration
	attempt   int
	// int64N returns a uniform random integer in [0, n); rand.Int64N unless a test sets
	// it.
	int64N func(n int64) int64
}

func newBackoff(base, max time.Duration) *backoff {
	return &backoff{base: base, max: max, int64N: rand.Int64N}
}

// next returns the delay of the next attempt and counts it.
func (b *backoff) next() time.Duration {
	ceiling := b.max
	if b.attempt < 62 && b.base < b.max>>b.attempt {
		ceiling = b.base << b.attempt
	}
	b.attempt++
	return time.Duration(b.int64N(int64(ceiling) + 1))
}

// reset starts the schedule again at base.
func (b *backoff) reset() { b.attempt = 0 }

// parseRetryAfter reads a Retry-After header (RFC 9110 §10.2.3): delay-seconds or an
// HTTP-date, as a duration from now; 0 when absent, malformed or in the past. It is
// bounded by maxReconnectionTime.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return min(time.Duration(min(secs, int64(maxReconnectionTime/time.Second)))*time.Second, maxReconnectionTime)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxReconnectionTime)
	}
	return 0
}
