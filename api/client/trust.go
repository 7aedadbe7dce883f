package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// DefaultCAFile is where `ducktail serve` (and `make run`) writes its self-signed
// certificate with its default --data-dir, relative to the working directory. A Stream or
// LiveQuery of an https:// URL given neither Options.HTTPClient nor Options.CAFile trusts
// it, besides the system's certificates, when the file exists, so that a program run
// from the directory of `make run` reaches https://localhost:8443 as the command line
// does.
//
// A relative path makes what a program trusts depend on the directory it runs in: the
// default is a convenience for local development. A program run elsewhere sets
// Options.CAFile; one that must trust the system's certificates alone sets
// Options.HTTPClient (http.DefaultClient will do), and then no file is read.
const DefaultCAFile = "data/tls/cert.pem"

// ErrUntrustedCertificate: the server's TLS certificate did not verify against the
// certificates the client trusts (RFC 5280 path validation, or a name the certificate
// does not hold, RFC 6125). It ends Stream and LiveQuery, since connecting again would
// fail the same way; the error wrapping it names what was trusted and holds the
// *tls.CertificateVerificationError.
var ErrUntrustedCertificate = errors.New("the server's TLS certificate is not trusted")

// NewHTTPClient returns an HTTP client for streams and snapshots that trusts the PEM
// certificates in caFile besides the system's ones, for a server with a self-signed or
// private certificate (`ducktail serve` writes its own to <data-dir>/tls/cert.pem). It has
// no Timeout, as Options.HTTPClient needs. Errors: the file cannot be read, or holds no
// PEM certificate.
func NewHTTPClient(caFile string) (*http.Client, error) {
	pool, err := CertPool(caFile)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: pool}
	transport.HTTP2 = HTTP2Config()
	return &http.Client{Transport: transport}, nil
}

// HTTP2Config is the HTTP/2 flow control of the clients NewHTTPClient makes (RFC 9113,
// section 5.2): DATA frames up to 1 MiB, and 8 MiB of a response read ahead per stream;
// the connection keeps Go's window (1 GiB), so that streams sharing a connection do not
// stop each other. Go's defaults, 16 KiB frames and a 4 MiB stream window, cost about a
// tenth of an Arrow snapshot's read rate over TLS on the project's 2-core machine
// (docs/benchmarks.md, BenchmarkBulk).
func HTTP2Config() *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxReadFrameSize:          1 << 20,
		MaxReceiveBufferPerStream: 8 << 20,
	}
}

// CertPool returns the system's certificate pool (an empty one where the system has
// none) with the PEM certificates of caFile added. Errors: the file cannot be read, or
// holds no PEM certificate.
func CertPool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return pool, nil
}

// httpClient resolves Options.HTTPClient and Options.CAFile for baseURL's scheme, and says
// what the client trusts, for ErrUntrustedCertificate.
func httpClient(scheme string, o Options) (*http.Client, string, error) {
	if o.HTTPClient != nil {
		return o.HTTPClient, "the certificates of Options.HTTPClient", nil
	}
	ca := o.CAFile
	if ca == "" && scheme == "https" {
		if _, err := os.Stat(DefaultCAFile); err == nil {
			ca = DefaultCAFile
		}
	}
	if ca == "" {
		return http.DefaultClient, "the system's certificates (Options.CAFile unset, no " + DefaultCAFile + " here)", nil
	}
	c, err := NewHTTPClient(ca)
	if err != nil {
		return nil, "", fmt.Errorf("CA file: %w", err)
	}
	return c, "the system's certificates and " + ca, nil
}

// untrusted wraps a failure to verify the server's certificate in ErrUntrustedCertificate,
// naming what was trusted and where to point; other errors it returns as they are.
func (c *consumer) untrusted(err error) error {
	if !errors.As(err, new(*tls.CertificateVerificationError)) {
		return err
	}
	return fmt.Errorf("%w: %w; trusted: %s; set Options.CAFile to the certificate that signed the server's (for `ducktail serve`'s self-signed one, <data-dir>/tls/cert.pem)", ErrUntrustedCertificate, err, c.trusted)
}
