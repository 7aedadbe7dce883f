package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// untrustedError is a TLS verification failure explained: which certificate the server
// presented, what the command trusted, and how to point it at the right certificate.
type untrustedError struct {
	err error
	// what is the server and the verification failure.
	what string
	// server describes the certificate the server presented.
	server string
	// hint says what to do.
	hint string
}

func (e *untrustedError) Error() string {
	return fmt.Sprintf("%s\nthe server presented %s; %s", e.what, e.server, e.hint)
}

func (e *untrustedError) Unwrap() error { return e.err }

// explainTLS returns err explained when it is a failure to verify the server's
// certificate (an unknown authority, or a name the certificate does not hold), else err.
// The explanation replaces the text of err (which may hold api/client's advice, meant
// for a program) with the request and the verification failure.
func (c *client) explainTLS(err error) error {
	var cve *tls.CertificateVerificationError
	if err == nil || !errors.As(err, &cve) {
		return err
	}
	what := fmt.Sprintf("%s: %v", c.base.Host, cve)
	server := "a certificate"
	if len(cve.UnverifiedCertificates) > 0 {
		server = describeCert(cve.UnverifiedCertificates[0])
	}
	trusted := "the system's certificates only (no --ca-cert, and no " + c.defaultCA + ")"
	if c.caCert != "" {
		trusted = "the system's certificates and " + c.caCert
	}
	var he x509.HostnameError
	if errors.As(err, &he) {
		return &untrustedError{err: err, what: what, server: server, hint: "it does not name the host of --server: use one of its names in --server"}
	}
	return &untrustedError{err: err, what: what, server: server, hint: "this command trusted " + trusted +
		". Point --ca-cert (or DUCKTAIL_CA_CERT) at the certificate that signed it: for `ducktail serve`'s self-signed one, " +
		"<data-dir>/tls/cert.pem of the server (or give --data-dir that directory)"}
}

// describeCert names a certificate by its subject, names and issuer.
func describeCert(cert *x509.Certificate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "a certificate for %q", cert.Subject.CommonName)
	if len(cert.DNSNames) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(cert.DNSNames, ", "))
	}
	issuer := cert.Issuer.CommonName
	if len(cert.Issuer.Organization) > 0 {
		issuer = cert.Issuer.Organization[0]
	}
	fmt.Fprintf(&b, " issued by %q", issuer)
	return b.String()
}
