package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/ducktail/ducktail/api"
	dtclient "github.com/ducktail/ducktail/api/client"
	"github.com/ducktail/ducktail/jetstream"
	"github.com/ducktail/ducktail/store"
)

// Roles of `ducktail serve` (docs/scaling.md, "Topology").
const (
	RoleWriter = "writer"
	RoleStream = "stream"
)

// nodeConfig is a stream node's own settings; its NATS connection is natsConfig's.
type nodeConfig struct {
	// WriterURL is the writer's base URL; WriterCA the PEM file of the CAs its TLS
	// certificate is checked against (the system's when "").
	WriterURL string
	WriterCA  string

	src    *jetstream.Source
	conn   *nats.Conn
	shapes *store.ShapeEngine
}

func addNodeFlags(f *pflag.FlagSet, c *nodeConfig) {
	f.StringVar(&c.WriterURL, "writer-url", "", "with --role stream: the writer's base URL, which answers everything but streams")
	f.StringVar(&c.WriterCA, "writer-ca", "", "with --role stream: PEM file of the CAs of the writer's TLS certificate (its self-signed cert.pem)")
}

// runNode starts a stream node: no DuckDB file; a jetstream.Source over the writer's
// stream and catalog feeds the Hub, and the API serves streams and proxies the rest to
// the writer. It returns once listening, after the catalog is loaded. Errors: a missing
// --nats-url or --writer-url, the writer's CA file, NATS.
func (m *Main) runNode(ctx context.Context) error {
	c := &m.Node
	if m.NATS.URL == "" || c.WriterURL == "" {
		return errors.New("--role stream needs --nats-url and --writer-url")
	}
	writer, err := url.Parse(c.WriterURL)
	if err != nil || (writer.Scheme != "http" && writer.Scheme != "https") || writer.Host == "" {
		return fmt.Errorf("--writer-url %q: want http(s)://host:port", c.WriterURL)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if c.WriterCA != "" {
		pool, err := dtclient.CertPool(c.WriterCA)
		if err != nil {
			return fmt.Errorf("--writer-ca: %w", err)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	opts := append(m.NATS.options(), nats.Name("ducktail stream node"))
	nc, err := nats.Connect(m.NATS.URL, opts...)
	if err != nil {
		return fmt.Errorf("--nats-url: %w", err)
	}
	c.conn = nc
	c.src = jetstream.NewSource()
	c.src.Stream = m.NATS.Stream
	c.src.Logger = m.Logger.With("component", "jetstream")
	if err := c.src.Start(ctx, nc, m.Hub); err != nil {
		return err
	}
	c.shapes = store.NewShapeEngine()
	m.Hub.Source, m.Hub.Shaper = c.src, c.shapes
	m.Hub.Logger = m.Logger.With("component", "stream")
	if err := m.Hub.Open(); err != nil {
		return err
	}
	cfg := api.NodeConfig{Config: m.API, Writer: writer, WriterTransport: transport, Shapes: c.shapes}
	cfg.Logger = m.Logger.With("component", "api")
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	cfg.Registry.MustRegister(c.src.Collectors()...)
	handler := api.NewStreamNode(cfg, c.src, m.Hub)
	return m.listen(handler, "writer", writer.String())
}

// close stops the source, the connection and the shape engine of a stream node.
func (c *nodeConfig) close() {
	if c.src != nil {
		c.src.Close()
	}
	if c.shapes != nil {
		c.shapes.Close()
	}
	if c.conn != nil {
		c.conn.Close()
	}
}
