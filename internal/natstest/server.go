// Package natstest runs embedded NATS servers with JetStream on loopback for tests (the
// nats-server/v2 module, never a downloaded binary): one server, or the members of a
// cluster, each restartable on the same ports and store directory.
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Server is one embedded NATS server with JetStream. Opts may be changed before Start
// (a smaller MaxPayload, cluster settings); Stop keeps its store, so a later Start comes
// back with the same streams.
type Server struct {
	TB   testing.TB
	Opts server.Options
	srv  *server.Server
}

// New returns a server named name on a free loopback port, with JetStream under a
// temporary directory; with clusterPort not 0, a member of cluster "ducktail" listening
// for routes on clusterPort and routing to the ports of routes other than its own. Call
// Start.
func New(tb testing.TB, name string, clusterPort int, routes ...int) *Server {
	n := &Server{TB: tb, Opts: server.Options{
		ServerName: name, Host: "127.0.0.1", Port: FreePort(tb), JetStream: true,
		StoreDir: tb.TempDir(), NoLog: true, NoSigs: true,
	}}
	if clusterPort != 0 {
		n.Opts.Cluster = server.ClusterOpts{Name: "ducktail", Host: "127.0.0.1", Port: clusterPort}
		for _, p := range routes {
			if p != clusterPort {
				n.Opts.Routes = append(n.Opts.Routes, &url.URL{Scheme: "nats", Host: "127.0.0.1:" + strconv.Itoa(p)})
			}
		}
	}
	return n
}

// Start starts the server and waits until it accepts connections; the test's cleanup
// stops it.
func (n *Server) Start() {
	n.TB.Helper()
	opts := n.Opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		n.TB.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		n.TB.Fatalf("nats %s did not start", n.Opts.ServerName)
	}
	n.srv = srv
	n.TB.Cleanup(n.Stop)
}

// Stop shuts the server down, cutting its clients and routes; a stopped server's Stop
// does nothing.
func (n *Server) Stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

// URL is the server's client URL.
func (n *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Opts.Port) }

// Running returns the running server (to inspect its connections), nil while stopped.
func (n *Server) Running() *server.Server { return n.srv }
