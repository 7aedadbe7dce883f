package client_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/store"
)

// TestMain runs the package's tests and examples with one real ducktail server on
// loopback, serving TLS with the self-signed certificate `ducktail serve` makes
// (api.EnsureSelfSignedCert), and sets what a user's shell would set for the examples:
// DUCKTAIL_SERVER (its URL), DUCKTAIL_TOKEN (an admin token) and DUCKTAIL_CA_CERT (the
// certificate). The examples read only those, so they run as written against any server.
func TestMain(m *testing.M) {
	code, err := runWithExampleServer(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "example server:", err)
		code = 1
	}
	os.Exit(code)
}

func runWithExampleServer(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "ducktail-example")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	certFile, keyFile, _, err := api.EnsureSelfSignedCert(filepath.Join(dir, "tls"), nil)
	if err != nil {
		return 0, err
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return 0, err
	}
	srv, err := openStack(filepath.Join(dir, "ducktail.duckdb"), "127.0.0.1:0", envOptions{
		listener: func(ln net.Listener) net.Listener {
			return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}})
		},
	})
	if err != nil {
		return 0, err
	}
	defer srv.close(false)
	_, token, err := srv.db.CreateToken(context.Background(), store.PurposeAdmin, "", 0)
	if err != nil {
		return 0, err
	}
	for k, v := range map[string]string{"DUCKTAIL_SERVER": "https://" + srv.addr, "DUCKTAIL_TOKEN": token, "DUCKTAIL_CA_CERT": certFile} {
		if err := os.Setenv(k, v); err != nil {
			return 0, err
		}
	}
	return m.Run(), nil
}
