package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/jetstream"
)

// topology is the deployment of docs/scaling.md on loopback: a 3-node NATS cluster with
// JetStream, one writer (`serve --nats-url … --nats-replicas 3`, an R3 stream) and stream
// nodes (`serve --role stream`), each server a process of its own. The writer reaches
// NATS through proxies, so that it alone can be cut off from JetStream; the stream nodes
// connect to the servers directly.
type topology struct {
	t       testing.TB
	nats    *natsCluster
	proxies []*natsProxy
	js      njs.JetStream
	writer  *serveProcess
	nodes   []*serveProcess
	// admin is the admin token, read from the writer's data directory.
	admin string
}

// topologyConfig varies a topology.
type topologyConfig struct {
	// writerFlags are added to the writer's flags, nodeFlags to every stream node's.
	writerFlags, nodeFlags []string
	// nodes is the number of stream nodes (default 2).
	nodes int
	// writerTLS serves the writer with TLS and its self-signed certificate, which the
	// nodes trust with --writer-ca; the test reaches the writer only through them.
	writerTLS bool
}

// serverFlags are the flags of every server of a topology: no request rate limit and
// room for every subscriber of one token (the scenarios open hundreds of streams with
// one), a short reconnect delay, a short drain.
var serverFlags = []string{"--plaintext", "--rate-limit", "-1", "--max-streams-per-token", "10000", "--retry", "100ms", "--drain-timeout", "5s"}

// startTopology starts the cluster, the writer and the stream nodes, and waits until each
// server answers /healthz. The second stream node takes its settings from DUCKTAIL_*
// environment variables instead of flags.
func startTopology(t testing.TB, cfg topologyConfig) *topology {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a NATS cluster, a writer and stream nodes as processes")
	}
	if cfg.nodes == 0 {
		cfg.nodes = 2
	}
	tp := &topology{t: t, nats: startNATSCluster(t)}
	tp.js = tp.nats.jetStream()
	var proxied []string
	for _, n := range tp.nats.servers {
		p := newNATSProxy(t, strings.TrimPrefix(n.URL(), "nats://"))
		tp.proxies = append(tp.proxies, p)
		proxied = append(proxied, p.url())
	}
	dataDir := t.TempDir()
	args := append([]string{"--data-dir", dataDir, "--nats-url", strings.Join(proxied, ","), "--nats-replicas", "3"}, serverFlags...)
	nodeFlags := cfg.nodeFlags
	var nodeEnv []string
	if cfg.writerTLS {
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--plaintext" })
		ca := filepath.Join(dataDir, tlsDir, api.SelfSignedCertFile)
		nodeFlags, nodeEnv = append(nodeFlags, "--writer-ca", ca), []string{"DUCKTAIL_WRITER_CA=" + ca}
	}
	tp.writer = startServe(t, "writer", nil, append(args, cfg.writerFlags...)...)
	admin, err := os.ReadFile(filepath.Join(dataDir, adminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	tp.admin = strings.TrimSpace(string(admin))
	waitUntil(t, 2*time.Minute, "the writer's JetStream stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := tp.js.Stream(ctx, jetstream.DefaultStream)
		return err == nil
	})
	for i := range cfg.nodes {
		name := fmt.Sprintf("node%d", i+1)
		if i%2 == 0 {
			args := append([]string{"--role", "stream", "--nats-url", tp.nats.urls(), "--writer-url", tp.writer.URL}, serverFlags...)
			tp.nodes = append(tp.nodes, startServe(t, name, nil, append(args, nodeFlags...)...))
			continue
		}
		env := append([]string{"DUCKTAIL_ROLE=stream", "DUCKTAIL_NATS_URL=" + tp.nats.urls(), "DUCKTAIL_WRITER_URL=" + tp.writer.URL}, nodeEnv...)
		tp.nodes = append(tp.nodes, startServe(t, name, env, append(serverFlags, cfg.nodeFlags...)...))
	}
	servers := tp.nodes
	if !cfg.writerTLS {
		servers = append(servers, tp.writer)
	}
	for _, p := range servers {
		tp.waitHealthy(p)
	}
	return tp
}

// waitHealthy waits until p answers GET /healthz with 200.
func (tp *topology) waitHealthy(p *serveProcess) {
	tp.t.Helper()
	waitUntil(tp.t, 2*time.Minute, p.name+" /healthz", func() bool {
		status, _, _, err := apiClient{base: p.URL}.do("GET", "/healthz", "", "")
		return err == nil && status == http.StatusOK
	})
}

// client returns a client of server p with the admin token.
func (tp *topology) client(p *serveProcess) apiClient { return apiClient{base: p.URL, token: tp.admin} }

// spread returns n subscribers of table with token, the i-th on servers[i % len], half
// of them by /stream/{token} and half with the token in Authorization, half decoding
// Arrow IPC and half JSON rows, and start as the ?cursor= of half of them; with
// failover each moves to the next server when its connection fails.
func spread(n int, name, table, token, start string, failover bool, servers ...*serveProcess) []*subscriber {
	var out []*subscriber
	for i := range n {
		s := &subscriber{
			name:     fmt.Sprintf("%s-%d", name, i),
			failover: failover,
			table:    table,
			token:    token,
			byPath:   i%2 == 0,
			json:     (i/2)%2 == 0,
		}
		for j := range servers {
			s.servers = append(s.servers, servers[(i+j)%len(servers)].URL)
		}
		if (i/4)%2 == 0 {
			s.start = start
		}
		out = append(out, s)
	}
	return out
}

// checkAll checks every subscriber against the acknowledged commits (checkExactly),
// reporting the first 10 subscribers that received something else and how many did.
func checkAll(t testing.TB, subs []*subscriber, want []commit) {
	t.Helper()
	wrong := 0
	for _, s := range subs {
		errs := checkExactly(s, want)
		if len(errs) == 0 {
			continue
		}
		if wrong++; wrong <= 10 {
			t.Error(strings.Join(errs, "\n"))
		}
	}
	if wrong > 10 {
		t.Errorf("… %d of %d subscribers in all did not receive exactly the acknowledged commits", wrong, len(subs))
	}
}

// streamToken creates a stream token for table through c and waits until every stream
// node accepts it: a node learns tokens from the writer's catalog in JetStream, and the
// moment before it does is TestNodesNewTokenIsValidAtOnce's, not the other scenarios'.
func (tp *topology) streamToken(t testing.TB, c apiClient, table string) (id, secret string) {
	t.Helper()
	id, secret = c.streamToken(t, table)
	for _, n := range tp.nodes {
		waitUntil(t, time.Minute, n.name+" to accept a new token", func() bool { return streamStatus(n.URL, table, secret) == http.StatusOK })
	}
	return id, secret
}

// streamStatus opens a stream of table on server with token in Authorization and
// returns the status of the answer (0 when none came), closing it at once.
func streamStatus(server, table, token string) int {
	req, err := http.NewRequest("GET", server+"/v1/tables/"+table+"/stream", nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := nodesHTTP.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
