package jetstream

import (
	"github.com/prometheus/client_golang/prometheus"
)

// commitDelayBuckets are the buckets of ducktail_jetstream_node_commit_delay_seconds, 0.5 ms
// to about 16 s.
var commitDelayBuckets = prometheus.ExponentialBuckets(0.0005, 2, 16)

// Collectors returns a stream node's Prometheus metrics of the JetStream path
// (docs/scaling.md, "Metrics"): ducktail_jetstream_node_tables (feeds running, one
// consumer each), ducktail_jetstream_node_messages_total (table messages received),
// ducktail_jetstream_node_pending_messages (messages JetStream holds for the feeds that
// they have not received yet: the consumer lag), and
// ducktail_jetstream_node_commit_delay_seconds (from a commit on the writer to its arrival
// at this node, both clocks' difference included).
func (s *Source) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_jetstream_node_tables",
			Help: "Tables whose feed (one JetStream consumer each) runs on this node."},
			func() float64 {
				s.mu.Lock()
				defer s.mu.Unlock()
				return float64(len(s.feeds))
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_jetstream_node_messages_total",
			Help: "Table messages this node's feeds received."},
			func() float64 { return float64(s.received.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_jetstream_node_pending_messages",
			Help: "Messages of the feeds' subjects JetStream holds that the feeds have not received yet (consumer lag)."},
			func() float64 {
				s.mu.Lock()
				defer s.mu.Unlock()
				var n uint64
				for _, f := range s.feeds {
					n += f.pending.Load()
				}
				return float64(n)
			}),
		s.commitDelay,
	}
}
