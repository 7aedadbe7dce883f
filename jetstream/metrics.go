package jetstream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collectors returns the publisher's Prometheus metrics (docs/scaling.md, "Metrics"):
// ducktail_jetstream_published_total (messages JetStream acknowledged),
// ducktail_jetstream_overflows_total (events left to the commit log because the queue was
// full), ducktail_jetstream_publish_failures_total (failed attempts, each retried),
// ducktail_jetstream_queued_events, and ducktail_jetstream_publish_lag_seconds: while
// events wait, how long ago the last published commit was committed; 0 when caught up.
func (p *Publisher) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_jetstream_published_total",
			Help: "Messages JetStream acknowledged (duplicates included)."},
			func() float64 { return float64(p.published.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_jetstream_overflows_total",
			Help: "Events not queued because the queue was full; published from the commit log."},
			func() float64 { return float64(p.overflows.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_jetstream_publish_failures_total",
			Help: "Failed publish attempts or JetStream API calls, each retried."},
			func() float64 { return float64(p.failures.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_jetstream_queued_events",
			Help: "Events waiting for JetStream."},
			func() float64 { return float64(len(p.queue)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_jetstream_publish_lag_seconds",
			Help: "While events wait, seconds since the last published commit was committed; 0 when caught up."},
			p.lag),
	}
}

// lag is the publish lag ducktail_jetstream_publish_lag_seconds reports.
func (p *Publisher) lag() float64 {
	last := p.lastCommitted.Load()
	if last == 0 || (len(p.queue) == 0 && !p.behind.Load()) {
		return 0
	}
	return p.Now().Sub(time.Unix(0, last)).Seconds()
}
