package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/api"
)

// TestUntrustedCertificateSaysWhereToPoint runs commands from a data dir other than the
// server's, as from another directory: each fails with the certificate the server
// presented, what the command trusted, and --ca-cert; --ca-cert and DUCKTAIL_CA_CERT
// pointing at the server's certificate make them work.
func TestUntrustedCertificateSaysWhereToPoint(t *testing.T) {
	st := startStack(t)
	elsewhere := t.TempDir()
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := newRootCommand()
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append(args, "--server", st.URL(), "--data-dir", elsewhere, "--token", st.admin))
		err := root.ExecuteContext(context.Background())
		return out.String(), err
	}
	st.ingest(t, "t", "application/x-ndjson", []byte(`{"n":1}`))
	for _, args := range [][]string{
		{"table", "list"},
		{"query", "SELECT 1"},
		{"ingest", "t", "../../testdata/seattle-weather.csv"},
		{"tail", "t", "--format", "ndjson"},
	} {
		_, err := run(args...)
		if err == nil {
			t.Fatalf("%v: no error with an untrusted certificate", args)
		}
		for _, want := range []string{
			"x509: certificate signed by unknown authority",
			`a certificate for "localhost"`, `issued by "ducktail self-signed"`,
			"the system's certificates only (no --ca-cert, and no " + filepath.Join(elsewhere, tlsDir, "cert.pem") + ")",
			"--ca-cert (or DUCKTAIL_CA_CERT)", "<data-dir>/tls/cert.pem",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error lacks %q:\n%v", args, want, err)
			}
		}
	}
	cert := filepath.Join(st.dir, tlsDir, api.SelfSignedCertFile)
	if out, err := run("table", "list", "--ca-cert", cert); err != nil || !strings.Contains(out, "NAME") {
		t.Fatalf("--ca-cert %s: %v\n%s", cert, err, out)
	}
	t.Setenv("DUCKTAIL_CA_CERT", cert)
	if out, err := run("table", "list"); err != nil || !strings.Contains(out, "NAME") {
		t.Fatalf("DUCKTAIL_CA_CERT=%s: %v\n%s", cert, err, out)
	}
}
