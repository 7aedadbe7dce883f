package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	dtclient "github.com/ducktail/ducktail/api/client"
)

// clientConfig is what every client command needs to reach a server: its URL, a token,
// and how to trust its certificate. Defaults reach the local server run by `make run`.
type clientConfig struct {
	server   string
	token    string
	dataDir  string
	caCert   string
	insecure bool
}

func (c *clientConfig) bind(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&c.server, "server", "https://localhost:8443", "ducktail server URL")
	f.StringVar(&c.token, "token", "", "token (default: <data-dir>/admin.token)")
	f.StringVar(&c.dataDir, "data-dir", "./data", "local data directory, for the default token and the self-signed certificate")
	f.StringVar(&c.caCert, "ca-cert", "", "PEM certificate to trust (default: <data-dir>/tls/cert.pem when present)")
	f.BoolVar(&c.insecure, "insecure", false, "do not verify the server's TLS certificate")
}

// client is an HTTP client of the ducktail API.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
	// caCert is the certificate file trusted besides the system's, "" for none;
	// defaultCA is where it was looked for when no --ca-cert was given.
	caCert    string
	defaultCA string
}

// newClient resolves the token and TLS trust of c.
func (c *clientConfig) newClient() (*client, error) {
	base, err := url.Parse(strings.TrimSuffix(c.server, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("--server %q: want an http:// or https:// URL", c.server)
	}
	tok := c.token
	if tok == "" {
		b, err := os.ReadFile(filepath.Join(c.dataDir, adminTokenFile))
		if err != nil {
			return nil, fmt.Errorf("no --token given and %v", err)
		}
		tok = strings.TrimSpace(string(b))
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: c.insecure}
	ca, defaultCA := c.caCert, filepath.Join(c.dataDir, tlsDir, "cert.pem")
	if ca == "" && fileExists(defaultCA) {
		ca = defaultCA
	}
	if ca != "" && !c.insecure {
		pool, err := dtclient.CertPool(ca)
		if err != nil {
			return nil, err
		}
		tlsConfig.RootCAs = pool
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	transport.ForceAttemptHTTP2 = true
	transport.HTTP2 = dtclient.HTTP2Config()
	if c.insecure {
		ca = ""
	}
	return &client{base: base, token: tok, http: &http.Client{Transport: transport}, caCert: ca, defaultCA: defaultCA}, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// request builds a request to path (with an optional query) carrying the token.
func (c *client) request(method, path string, body io.Reader) (*http.Request, error) {
	u := *c.base
	p, q, _ := strings.Cut(path, "?")
	u.Path = strings.TrimSuffix(u.Path, "/") + p
	u.RawQuery = q
	req, err := http.NewRequest(method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return req, nil
}

// do sends req and returns the response for a 2xx status; otherwise the problem+json
// detail as an error.
func (c *client) do(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.explainTLS(err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readProblem(resp)
}

// problemError is a problem+json answer (RFC 9457).
type problemError struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Row    int    `json:"row"`
	Line   int    `json:"line"`
	Column string `json:"column"`
}

func (p *problemError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s: %s", p.Status, p.Code, p.Detail)
	if p.Row > 0 {
		fmt.Fprintf(&b, " (row %d", p.Row)
		if p.Line > 0 {
			fmt.Fprintf(&b, ", line %d", p.Line)
		}
		if p.Column != "" {
			fmt.Fprintf(&b, ", column %q", p.Column)
		}
		b.WriteString(")")
	}
	return b.String()
}

func readProblem(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var p problemError
	if json.Unmarshal(body, &p) != nil || p.Status == 0 {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return &p
}

// doJSON sends a JSON body (nil for none) and decodes a JSON answer into out (nil to
// discard it).
func (c *client) doJSON(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.request(method, path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return errors.Join(errors.New("bad answer from server"), err)
	}
	return nil
}

// addClientCommands adds every command that talks to a server.
func addClientCommands(root *cobra.Command) {
	var cfg clientConfig
	for _, cmd := range []*cobra.Command{
		newTableCommand(&cfg), newTokenCommand(&cfg), newIngestCommand(&cfg), newQueryCommand(&cfg), newTailCommand(&cfg),
	} {
		cfg.bind(cmd)
		root.AddCommand(cmd)
	}
}
