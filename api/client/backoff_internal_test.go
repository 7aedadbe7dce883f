package client

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestBackoffFullJitter: attempt n draws from [0, min(max, base·2ⁿ)], and reset starts
// the schedule again.
func TestBackoffFullJitter(t *testing.T) {
	b := newBackoff(100*time.Millisecond, time.Second)
	var ceilings []time.Duration
	b.int64N = func(n int64) int64 {
		ceilings = append(ceilings, time.Duration(n-1))
		return n - 1
	}
	var got []time.Duration
	for range 6 {
		got = append(got, b.next())
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	if !slices.Equal(got, want) || !slices.Equal(ceilings, want) {
		t.Fatalf("delays %v (ceilings %v), want %v", got, ceilings, want)
	}
	b.reset()
	if d := b.next(); d != 100*time.Millisecond {
		t.Fatalf("after reset: %v", d)
	}
	b.int64N = func(int64) int64 { return 0 }
	if d := b.next(); d != 0 {
		t.Fatalf("full jitter reaches 0: got %v", d)
	}
	for range 100 {
		b.next()
	}
	b.int64N = func(n int64) int64 { return n - 1 }
	if d := b.next(); d != time.Second {
		t.Fatalf("after many attempts: %v, want the cap", d)
	}
}

// TestParseRetryAfter: delay-seconds and HTTP-date (RFC 9110 §10.2.3).
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 3 ", 3 * time.Second},
		{"0", 0},
		{"-1", 0},
		{"soon", 0},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second},
		{now.Add(-10 * time.Second).Format(http.TimeFormat), 0},
		{"99999999999", time.Hour},
	} {
		h := http.Header{}
		if tc.v != "" {
			h.Set("Retry-After", tc.v)
		}
		if got := parseRetryAfter(h, now); got != tc.want {
			t.Errorf("Retry-After %q: %v, want %v", tc.v, got, tc.want)
		}
	}
}
