package main

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/ducktail/ducktail/jetstream"
)

// natsConfig is serve's JetStream publishing (docs/scaling.md): off unless URL is set.
type natsConfig struct {
	// URL is the NATS server URLs, comma-separated; "" publishes nothing.
	URL string
	// Creds is a NATS credentials file (JWT and NKey seed), CA a PEM file of the CAs that
	// sign the NATS servers' certificates; either may be "".
	Creds, CA string
	// QueueSize bounds the events waiting for JetStream (jetstream.NewPublisher).
	QueueSize int

	// Publisher tuning, copied onto the Publisher when it starts.
	Stream     string
	Replicas   int
	MaxAge     time.Duration
	Duplicates time.Duration

	pub  *jetstream.Publisher
	conn *nats.Conn
}

// newNATSConfig returns the defaults: no URL, jetstream.Publisher's stream settings.
func newNATSConfig() natsConfig {
	return natsConfig{QueueSize: jetstream.DefaultQueueSize, Stream: jetstream.DefaultStream, Replicas: 1, Duplicates: jetstream.DefaultDuplicates}
}

func addNATSFlags(f *pflag.FlagSet, c *natsConfig) {
	f.StringVar(&c.URL, "nats-url", "", "publish every commit to NATS JetStream at these URLs (comma-separated); default: no NATS")
	f.StringVar(&c.Creds, "nats-creds", "", "NATS credentials file")
	f.StringVar(&c.CA, "nats-ca", "", "PEM file of the CAs of the NATS servers' TLS certificates")
	f.StringVar(&c.Stream, "nats-stream", c.Stream, "JetStream stream name (subjects ducktail.>)")
	f.IntVar(&c.Replicas, "nats-replicas", c.Replicas, "replicas of the JetStream stream (1, 3 or 5)")
	f.DurationVar(&c.MaxAge, "nats-max-age", 0, "retention of the JetStream stream (0: unlimited)")
	f.DurationVar(&c.Duplicates, "nats-duplicate-window", c.Duplicates, "JetStream duplicate window, within which a republished commit is dropped")
	f.IntVar(&c.QueueSize, "nats-queue", c.QueueSize, "events queued for JetStream; past it the publisher reads the commit log instead")
}

// options returns the NATS options of c: reconnecting without end, so that serve starts
// and keeps committing while NATS is unreachable (the publisher catches up later).
func (c *natsConfig) options() []nats.Option {
	opts := []nats.Option{nats.Name("ducktail writer"), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true)}
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	if c.CA != "" {
		opts = append(opts, nats.RootCAs(c.CA))
	}
	return opts
}

// start connects to NATS and starts m's publisher (set as the store's Publisher before
// the store opened). Errors: a malformed URL or option.
func (c *natsConfig) start(m *Main) error {
	nc, err := nats.Connect(c.URL, c.options()...)
	if err != nil {
		return fmt.Errorf("--nats-url: %w", err)
	}
	c.pub.Stream, c.pub.Replicas, c.pub.MaxAge, c.pub.Duplicates = c.Stream, c.Replicas, c.MaxAge, c.Duplicates
	c.pub.Logger = m.Logger.With("component", "jetstream")
	if err := c.pub.Start(nc, m.Store); err != nil {
		nc.Close()
		return fmt.Errorf("jetstream: %w", err)
	}
	c.conn = nc
	return nil
}

// close stops the publisher and the connection; what it had not published yet is
// published from the commit log at the next start.
func (c *natsConfig) close() {
	if c.conn != nil {
		c.pub.Close()
		c.conn.Close()
	}
}
