package client_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fault is what the proxy does to one response.
type fault struct {
	// headerDelay holds the response headers back this long.
	headerDelay time.Duration
	// cutAfter aborts the response after this many body bytes (a reset connection, no
	// terminal event); -1 never.
	cutAfter int
	// stallAfter stops forwarding after this many body bytes and holds the connection
	// open, silent, until the client leaves; -1 never.
	stallAfter int
	// lineEnd replaces every LF of the body ("\r\n" or "\r"); "" keeps LF.
	lineEnd string
	// chunked writes the body in random pieces, down to one byte, flushing each, so that
	// the client's reads end at any byte (between a CR and its LF too).
	chunked bool
}

// none is a fault that changes nothing.
var none = fault{cutAfter: -1, stallAfter: -1}

// proxied records one request through the proxy.
type proxied struct {
	at          time.Time
	path        string
	lastEventID string
	status      int
	contentType string
	cut         bool
	stalled     bool
}

// faultProxy is an HTTP proxy between the client and a real server that damages
// responses as plan says: it cuts them at a byte offset, stalls them, delays their
// headers, rewrites their line ends and splits them into random pieces. It forwards real
// bytes from the real server; only the transport around them is damaged.
//
// When it stops forwarding a response, it hangs up on the server at once, so the server
// sees its clients leave at any moment too, in the middle of a replay's reads included.
type faultProxy struct {
	target    string
	plan      func(i int, r *http.Request, rng *rand.Rand) fault
	transport *http.Transport
	srv       *httptest.Server

	// ctx bounds the upstream requests, which outlive their handlers while drained;
	// cancel and wg end and wait for the drains.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.Mutex
	rng *rand.Rand
	log []proxied
}

// newFaultProxy starts a proxy to target (a base URL); plan is asked about every
// request, numbered from 0, with a random source seeded by seed.
func newFaultProxy(t testing.TB, target string, seed uint64, plan func(i int, r *http.Request, rng *rand.Rand) fault) *faultProxy {
	p := &faultProxy{target: target, plan: plan, transport: &http.Transport{}, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
		p.cancel()
		p.wg.Wait()
		p.transport.CloseIdleConnections()
	})
	return p
}

// URL is the base URL clients use instead of the server's.
func (p *faultProxy) URL() string { return p.srv.URL }

// requests returns a copy of the log.
func (p *faultProxy) requests() []proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxied(nil), p.log...)
}

// streams returns the logged stream requests.
func (p *faultProxy) streams() []proxied {
	var out []proxied
	for _, r := range p.requests() {
		if strings.Contains(r.path, "/stream") {
			out = append(out, r)
		}
	}
	return out
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	i := len(p.log)
	p.log = append(p.log, proxied{at: time.Now(), path: r.URL.Path, lastEventID: r.Header.Get("Last-Event-ID")})
	f := p.plan(i, r, p.rng)
	rng := rand.New(rand.NewPCG(p.rng.Uint64(), uint64(i)))
	p.mu.Unlock()
	mark := func(fn func(*proxied)) {
		p.mu.Lock()
		fn(&p.log[i])
		p.mu.Unlock()
	}

	upCtx, upCancel := context.WithCancel(p.ctx)
	out, err := http.NewRequestWithContext(upCtx, r.Method, p.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		upCancel()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		upCancel()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	// The pump owns the upstream body: it hands it to the handler piece by piece, and
	// hangs up once the handler stops forwarding.
	pieces := make(chan piece)
	stop := make(chan struct{})
	defer close(stop)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer upCancel()
		defer resp.Body.Close()
		for {
			buf := make([]byte, 32<<10)
			n, err := resp.Body.Read(buf)
			select {
			case pieces <- piece{buf[:n], err}:
				if err != nil {
					return
				}
				continue
			case <-stop:
			}
			return
		}
	}()
	mark(func(l *proxied) { l.status, l.contentType = resp.StatusCode, resp.Header.Get("Content-Type") })
	if f.headerDelay > 0 {
		select {
		case <-time.After(f.headerDelay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if f.lineEnd != "" {
		w.Header().Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	rc.Flush()
	written := 0
	for {
		var in piece
		select {
		case in = <-pieces:
		case <-r.Context().Done():
			return
		}
		data := in.data
		if f.lineEnd != "" {
			data = bytes.ReplaceAll(data, []byte("\n"), []byte(f.lineEnd))
		}
		for len(data) > 0 {
			k := len(data)
			if f.chunked {
				k = 1 + rng.IntN(len(data))
			}
			if f.cutAfter >= 0 && written+k > f.cutAfter {
				w.Write(data[:f.cutAfter-written])
				rc.Flush()
				mark(func(l *proxied) { l.cut = true })
				panic(http.ErrAbortHandler)
			}
			if f.stallAfter >= 0 && written+k > f.stallAfter {
				w.Write(data[:f.stallAfter-written])
				rc.Flush()
				mark(func(l *proxied) { l.stalled = true })
				<-r.Context().Done()
				return
			}
			if _, err := w.Write(data[:k]); err != nil || rc.Flush() != nil {
				return // the client left
			}
			written += k
			data = data[k:]
		}
		if in.err == io.EOF {
			return
		}
		if in.err != nil {
			panic(http.ErrAbortHandler)
		}
	}
}

// piece is one read of an upstream body.
type piece struct {
	data []byte
	err  error
}
