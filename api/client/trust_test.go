package client_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/api/client"
)

// TestCertificateTrust follows a table of the TLS server TestMain started, from working
// directories with and without data/tls/cert.pem: the default CA file is trusted where
// it exists; elsewhere, or with an HTTPClient of the caller's, an untrusted certificate
// ends Stream and LiveQuery with ErrUntrustedCertificate naming what was trusted, instead
// of retrying; a CAFile that cannot be read is an error at once.
func TestCertificateTrust(t *testing.T) {
	server, token, caFile := os.Getenv("DUCKTAIL_SERVER"), os.Getenv("DUCKTAIL_TOKEN"), os.Getenv("DUCKTAIL_CA_CERT")
	hc, err := client.NewHTTPClient(caFile)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", server+"/v1/tables/trust/rows?create=true", strings.NewReader("n\n1\n"))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the table: %v %v", err, resp)
	}
	resp.Body.Close()

	// follow streams until live (nil) or until Stream returns on its own.
	follow := func(o client.Options) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		o.Table = "trust"
		live := false
		o.OnStatus = func(s client.Status) {
			if s == client.Live {
				live = true
				cancel()
			}
		}
		err := client.Stream(ctx, server, token, o)
		if live {
			return nil
		}
		return err
	}
	withCert := t.TempDir()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(withCert, "data", "tls"), 0o755)
	os.WriteFile(filepath.Join(withCert, filepath.FromSlash(client.DefaultCAFile)), pem, 0o644)

	t.Chdir(withCert)
	if err := follow(client.Options{}); err != nil {
		t.Fatalf("with %s in the working directory: %v", client.DefaultCAFile, err)
	}
	err = follow(client.Options{HTTPClient: http.DefaultClient})
	if !errors.Is(err, client.ErrUntrustedCertificate) || !strings.Contains(err.Error(), "the certificates of Options.HTTPClient") {
		t.Fatalf("with an HTTPClient of the caller's, %s is not read: %v", client.DefaultCAFile, err)
	}

	t.Chdir(t.TempDir())
	err = follow(client.Options{})
	if !errors.Is(err, client.ErrUntrustedCertificate) || !strings.Contains(err.Error(), "no "+client.DefaultCAFile+" here") ||
		!strings.Contains(err.Error(), "x509: certificate signed by unknown authority") || !strings.Contains(err.Error(), "Options.CAFile") {
		t.Fatalf("without a CA file: %v", err)
	}
	err = client.LiveQuery(context.Background(), server, token, client.LiveOptions{Options: client.Options{Table: "trust"}, StartWithSnapshot: true})
	if !errors.Is(err, client.ErrUntrustedCertificate) {
		t.Fatalf("LiveQuery's snapshot without a CA file: %v", err)
	}
	if err := follow(client.Options{CAFile: caFile}); err != nil {
		t.Fatalf("CAFile %s: %v", caFile, err)
	}
	err = follow(client.Options{CAFile: "missing.pem"})
	if err == nil || errors.Is(err, client.ErrUntrustedCertificate) || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("a CAFile that does not exist: %v", err)
	}
}
