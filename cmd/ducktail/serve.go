package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/jetstream"
	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// Files under the data directory.
const (
	databaseFile   = "ducktail.duckdb"
	adminTokenFile = "admin.token"
	tlsDir         = "tls"
)

// DefaultDrainTimeout is how long shutdown waits for streams to leave after asking them
// to reconnect.
const DefaultDrainTimeout = 10 * time.Second

// Main is the ducktail server process (docs/design.md, "Code conventions"): set the
// fields (ParseFlags-style, by the serve command or a test), then Run, then Close.
type Main struct {
	// Role is RoleWriter (the default: the DuckDB file, every endpoint) or RoleStream
	// (a stream node: streams from JetStream, the rest proxied to WriterURL).
	Role      string
	DataDir   string
	Addr      string
	Plaintext bool
	TLSCert   string
	TLSKey    string
	// DrainTimeout bounds the wait for streams on shutdown; DrainSpread spreads the
	// retry_ms sent to them.
	DrainTimeout time.Duration
	DrainSpread  time.Duration

	Store  *store.DB
	Hub    *stream.Hub
	Reader *snapshot.Reader
	API    api.Config
	// NATS, when its URL is set, publishes every commit to JetStream (docs/scaling.md);
	// a stream node reads them from it.
	NATS natsConfig
	// Node configures a stream node (Role RoleStream).
	Node   nodeConfig
	Logger *slog.Logger
	// Out receives the one-time admin token banner.
	Out io.Writer

	// AdminToken is the admin token created by Run on first start, or "".
	AdminToken string
	// URL is the base URL the server listens on, known after Run.
	URL string

	stack    *api.Stack
	http     *http.Server
	listener net.Listener
	served   chan error
}

// NewMain returns a Main with the defaults of every part.
func NewMain() *Main {
	return &Main{
		Role:         RoleWriter,
		DataDir:      "./data",
		Addr:         ":8443",
		DrainTimeout: DefaultDrainTimeout,
		DrainSpread:  5 * time.Second,
		Store:        store.NewDB(""),
		Hub:          stream.NewHub(nil),
		Reader:       snapshot.NewReader(nil),
		NATS:         newNATSConfig(),
		Logger:       slog.Default(),
		Out:          os.Stderr,
	}
}

// Run opens the store under DataDir, makes the admin token and the self-signed
// certificate on first start, and starts serving on Addr. It returns once listening.
func (m *Main) Run(ctx context.Context) error {
	if err := os.MkdirAll(m.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	switch m.Role {
	case RoleWriter:
	case RoleStream:
		return m.runNode(ctx)
	default:
		return fmt.Errorf("--role %q: use %s or %s", m.Role, RoleWriter, RoleStream)
	}
	m.Store.Path = filepath.Join(m.DataDir, databaseFile)
	if m.NATS.URL != "" {
		m.NATS.pub = jetstream.NewPublisher(m.Hub, m.NATS.QueueSize)
		m.Store.Publisher = m.NATS.pub
		if m.API.Registry == nil {
			m.API.Registry = prometheus.NewRegistry()
		}
		m.API.Registry.MustRegister(m.NATS.pub.Collectors()...)
	}
	if err := m.openStack(ctx); err != nil {
		return err
	}
	if m.NATS.URL != "" {
		if err := m.NATS.start(m); err != nil {
			return err
		}
	}
	if err := m.ensureAdminToken(ctx); err != nil {
		return err
	}
	return m.listen(m.stack.Handler, "data_dir", m.DataDir)
}

// listen serves handler on Addr, with TLS unless Plaintext (the self-signed certificate
// under DataDir when none is given), and logs the URL with attrs.
func (m *Main) listen(handler http.Handler, attrs ...any) error {
	m.http = api.NewHTTPServer(m.Addr, handler, m.Plaintext)
	m.http.ErrorLog = slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn)
	cert, key := m.TLSCert, m.TLSKey
	if !m.Plaintext {
		if cert == "" || key == "" {
			var created bool
			var err error
			if cert, key, created, err = api.EnsureSelfSignedCert(filepath.Join(m.DataDir, tlsDir), nil); err != nil {
				return fmt.Errorf("self-signed certificate: %w", err)
			}
			if created {
				m.Logger.Info("created a self-signed TLS certificate", "cert", cert)
			}
		}
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			return fmt.Errorf("TLS certificate: %w", err)
		}
	}
	ln, err := net.Listen("tcp", m.Addr)
	if err != nil {
		return err
	}
	m.listener = ln
	scheme := "https"
	if m.Plaintext {
		scheme = "http"
	}
	m.URL = scheme + "://" + hostPort(ln.Addr())
	m.served = make(chan error, 1)
	if m.Plaintext {
		go func() { m.served <- m.http.Serve(ln) }()
	} else {
		go func() { m.served <- m.http.ServeTLS(ln, cert, key) }()
	}
	m.Logger.Info("ducktail serving", append([]any{"url", m.URL, "role", m.Role, "version", version}, attrs...)...)
	return nil
}

// openStack opens the server's parts (api.OpenStack), retrying for a few seconds while
// another process still holds the database file's lock: right after a kill -9 the old
// process may not be gone yet, and a supervisor restarting at once should not fail on that.
// It logs the wait once; past lockWait the error names the process holding the lock.
func (m *Main) openStack(ctx context.Context) error {
	deadline := time.Now().Add(lockWait)
	for waited := false; ; waited = true {
		st, err := api.OpenStack(ctx, api.StackConfig{Store: m.Store, Hub: m.Hub, Reader: m.Reader, API: m.API, Logger: m.Logger})
		if err == nil {
			m.stack = st
			return nil
		}
		if !strings.Contains(err.Error(), "Conflicting lock") {
			return err
		}
		if time.Now().After(deadline) {
			holder := "another process"
			if pid := lockHolderPID.FindStringSubmatch(err.Error()); pid != nil {
				holder = "process " + pid[1]
			}
			return fmt.Errorf("%s is locked by %s (another ducktail serve on this --data-dir?); stop it or choose another --data-dir: %w", m.Store.Path, holder, err)
		}
		if !waited {
			m.Logger.Warn("the database file is locked by another process; waiting for it", "path", m.Store.Path, "wait", lockWait)
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lockHolderPID finds the PID in DuckDB's "Conflicting lock is held in … (PID 123)".
var lockHolderPID = regexp.MustCompile(`\(PID (\d+)\)`)

// lockWait is how long Run waits for another process's lock on the database file.
const lockWait = 5 * time.Second

// hostPort renders a listen address as a URL host, "localhost:port" for wildcard binds.
func hostPort(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || tcp.IP.IsUnspecified() {
		_, port, _ := net.SplitHostPort(a.String())
		return "localhost:" + port
	}
	return a.String()
}

// ensureAdminToken creates an admin token when the catalog has no token at all (first
// start), prints it once to Out and writes it to <data-dir>/admin.token, mode 0600, for
// the local CLI.
func (m *Main) ensureAdminToken(ctx context.Context) error {
	if len(m.Store.Tokens()) > 0 {
		return nil
	}
	_, secret, err := m.Store.CreateToken(ctx, store.PurposeAdmin, "", 0)
	if err != nil {
		return fmt.Errorf("create admin token: %w", err)
	}
	path := filepath.Join(m.DataDir, adminTokenFile)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	m.AdminToken = secret
	fmt.Fprintf(m.Out, "\nducktail: created the admin token (shown once; also saved to %s):\n\n    %s\n\n", path, secret)
	return nil
}

// Close drains the streams (each gets reconnect, reason "server_draining"), waits up to
// DrainTimeout for them, shuts the HTTP server down and closes the store. Cancel ctx (a
// second signal) to stop waiting.
func (m *Main) Close(ctx context.Context) error {
	var errs []error
	if m.http != nil {
		drainCtx, cancel := context.WithTimeout(ctx, m.DrainTimeout)
		if err := m.Hub.Drain(drainCtx, m.DrainSpread); err != nil {
			m.Logger.Warn("streams still open at the drain deadline; closing them", "streams", m.Hub.Streams())
		}
		if err := m.http.Shutdown(drainCtx); err != nil {
			errs = append(errs, m.http.Close())
		}
		cancel()
		if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	m.NATS.close()
	m.Node.close()
	if m.stack != nil {
		errs = append(errs, m.stack.Close())
	} else if m.Role == RoleStream {
		errs = append(errs, m.Hub.Close())
	}
	return errors.Join(errs...)
}

// maxCommitDelay bounds --commit-delay: a group commit that expects a writer that does
// not come back waits that long, and its commits with it.
const maxCommitDelay = 10 * time.Millisecond

func newServeCommand() *cobra.Command {
	m := NewMain()
	var logLevel, logFormat string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the ducktail server (TLS with a self-signed certificate on :8443 by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return err
			}
			m.Logger = logger
			slog.SetDefault(logger)
			m.Out = cmd.ErrOrStderr()
			if d := m.Store.CommitDelay; d < 0 || d > maxCommitDelay {
				return fmt.Errorf("--commit-delay %s: want 0 to %s", d, maxCommitDelay)
			}
			if err := m.Run(cmd.Context()); err != nil {
				return err
			}
			select {
			case <-cmd.Context().Done():
			case err := <-m.served:
				m.served <- err
			}
			logger.Info("shutting down: draining streams", "deadline", m.DrainTimeout)
			// A second signal interrupts the drain.
			second, stop := signalContext()
			defer stop()
			if err := m.Close(second); err != nil {
				return err
			}
			logger.Info("ducktail stopped: streams drained, store closed")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Role, "role", m.Role, "writer (the DuckDB file, every endpoint) or stream (a stream node: streams from NATS JetStream, the rest proxied to --writer-url; docs/scaling.md)")
	f.StringVar(&m.DataDir, "data-dir", m.DataDir, "directory of the DuckDB file, the admin token and the self-signed certificate")
	f.StringVar(&m.Addr, "addr", m.Addr, "listen address")
	f.BoolVar(&m.Plaintext, "plaintext", false, "serve HTTP/1.1 and h2c without TLS (behind a proxy, in tests)")
	f.StringVar(&m.TLSCert, "tls-cert", "", "TLS certificate file (PEM); default: a self-signed one under <data-dir>/tls")
	f.StringVar(&m.TLSKey, "tls-key", "", "TLS key file (PEM)")
	f.DurationVar(&m.DrainTimeout, "drain-timeout", m.DrainTimeout, "how long shutdown waits for streams to reconnect elsewhere")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	addStoreFlags(f, m.Store)
	addStreamFlags(f, m.Hub)
	addReaderFlags(f, m.Reader)
	addAPIFlags(f, &m.API)
	addNATSFlags(f, &m.NATS)
	addNodeFlags(f, &m.Node)
	return cmd
}
