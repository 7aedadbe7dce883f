package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/internal/natstest"
	"github.com/ducktail/ducktail/jetstream"
)

// natsCluster is a 3-node NATS cluster with JetStream on loopback, each node's store in
// its own temporary directory. The servers advertise no client URLs (NoAdvertise), so a
// client connects only to the URLs it was given: a client given proxies (natsProxy)
// stays behind them.
type natsCluster struct {
	t       testing.TB
	servers []*natstest.Server
}

// startNATSCluster starts the cluster and waits until JetStream answers.
func startNATSCluster(t testing.TB) *natsCluster {
	t.Helper()
	routes := []int{natstest.FreePort(t), natstest.FreePort(t), natstest.FreePort(t)}
	c := &natsCluster{t: t}
	for i := range routes {
		n := natstest.New(t, fmt.Sprintf("n%d", i+1), routes[i], routes...)
		n.Opts.Cluster.NoAdvertise = true
		c.servers = append(c.servers, n)
	}
	var wg sync.WaitGroup
	for _, n := range c.servers {
		wg.Go(n.Start)
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, n := range c.servers {
			n.Stop()
		}
	})
	js := c.jetStream()
	waitUntil(t, 2*time.Minute, "JetStream of the NATS cluster", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})
	return c
}

// urls returns the client URLs of every server, comma-separated.
func (c *natsCluster) urls() string {
	var u []string
	for _, n := range c.servers {
		u = append(u, n.URL())
	}
	return strings.Join(u, ",")
}

// jetStream returns a JetStream client of the whole cluster, reconnecting without end.
func (c *natsCluster) jetStream() njs.JetStream {
	c.t.Helper()
	nc, err := nats.Connect(c.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	return js
}

// streamLeader returns the index of the server leading the writer's JetStream stream.
func (c *natsCluster) streamLeader(js njs.JetStream) int {
	c.t.Helper()
	var leader string
	waitUntil(c.t, time.Minute, "a leader of the JetStream stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, jetstream.DefaultStream)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		if err != nil || info.Cluster == nil {
			return false
		}
		leader = info.Cluster.Leader
		return leader != ""
	})
	for i, n := range c.servers {
		if n.Opts.ServerName == leader {
			return i
		}
	}
	c.t.Fatalf("stream leader %q is none of the servers", leader)
	return -1
}

// streamNodeClient is the name of a stream node's NATS connection.
const streamNodeClient = "ducktail stream node"

// clientsNamed returns how many client connections named name server i serves.
func (c *natsCluster) clientsNamed(i int, name string) int {
	c.t.Helper()
	cz, err := c.servers[i].Running().Connz(&server.ConnzOptions{Limit: 1024})
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, ci := range cz.Conns {
		if ci.Name == name {
			n++
		}
	}
	return n
}

// lastPublishedSeq returns the Ducktail-Seq of the last message JetStream holds on the
// subject of table id tableID, 0 when it holds none.
func lastPublishedSeq(t testing.TB, js njs.JetStream, tableID int64) int64 {
	t.Helper()
	var seq int64
	waitUntil(t, time.Minute, "a read of the JetStream stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, jetstream.DefaultStream)
		if err != nil {
			return false
		}
		m, err := s.GetLastMsgForSubject(ctx, jetstream.TableSubject(jetstream.DefaultSubjectPrefix, tableID))
		if err != nil {
			return false
		}
		seq, err = strconv.ParseInt(m.Header.Get(jetstream.HeaderSeq), 10, 64)
		return err == nil
	})
	return seq
}

// natsProxy forwards TCP connections from a loopback port to one NATS server, and can be
// cut (listener and every connection closed) and restored on the same port: the writer
// reaches NATS through proxies, so that it alone can be cut off from JetStream.
type natsProxy struct {
	t      testing.TB
	port   int
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// newNATSProxy returns a proxy to target ("host:port"), listening.
func newNATSProxy(t testing.TB, target string) *natsProxy {
	p := &natsProxy{t: t, port: natstest.FreePort(t), target: target}
	p.restore()
	t.Cleanup(p.cut)
	return p
}

func (p *natsProxy) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", p.port) }

// restore listens again on the proxy's port.
func (p *natsProxy) restore() {
	p.t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.conns = ln, map[net.Conn]struct{}{}
	p.mu.Unlock()
	go p.accept(ln)
}

func (p *natsProxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns[c], p.conns[u] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { io.Copy(u, c); u.Close(); c.Close() }()
		go func() { io.Copy(c, u); u.Close(); c.Close() }()
	}
}

// cut closes the listener and every forwarded connection: connections to the proxy are
// refused until restore.
func (p *natsProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return
	}
	p.ln.Close()
	p.ln = nil
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// waitUntil polls cond every 20 ms until it holds, failing the test after timeout (a
// bound against a hang, not a measure of speed).
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}
