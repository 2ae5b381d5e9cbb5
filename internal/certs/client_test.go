package certs_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
)

func TestNewClientRefusesBadFiles(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	leaf := ca.Leaf(t, "client", certstest.LeafOptions{Client: true})
	other := ca.Leaf(t, "other", certstest.LeafOptions{Client: true})
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name  string
		f     certs.ClientFiles
		field string // FileError.Field; "" for ErrCertWithoutKey
	}{
		{"cert without key", certs.ClientFiles{Cert: leaf.CertFile}, ""},
		{"key without cert", certs.ClientFiles{Key: leaf.KeyFile}, ""},
		{"unreadable ca", certs.ClientFiles{CA: missing}, "ca"},
		{"ca without certificates", certs.ClientFiles{CA: garbage}, "ca"},
		{"unreadable cert", certs.ClientFiles{Cert: missing, Key: leaf.KeyFile}, "cert"},
		{"unreadable key", certs.ClientFiles{Cert: leaf.CertFile, Key: missing}, "key"},
		{"mismatched pair", certs.ClientFiles{Cert: leaf.CertFile, Key: other.KeyFile}, "cert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := certs.NewClient(tt.f)
			if tt.field == "" {
				if !errors.Is(err, certs.ErrCertWithoutKey) {
					t.Fatalf("err = %v, want ErrCertWithoutKey", err)
				}
				return
			}
			var fe *certs.FileError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want a FileError for %s", err, tt.field)
			}
			if !strings.Contains(err.Error(), fe.Path) || fe.Path == "" {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
}

// tlsServer is an HTTPS server with a certificate of ca that, when
// clientCA is set, requires a client certificate it signed.
func tlsServer(t *testing.T, ca *certstest.CA, clientCA *certstest.CA) *httptest.Server {
	t.Helper()
	leaf := ca.Leaf(t, "server", certstest.LeafOptions{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "-"
		if len(r.TLS.PeerCertificates) > 0 {
			name = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_, _ = io.WriteString(w, name)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLS}}
	if clientCA != nil {
		srv.TLS.ClientCAs = clientCA.Pool()
		srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, c *certs.Client, url string) (string, error) {
	t.Helper()
	tr := &http.Transport{DialTLSContext: c.DialTLS((&net.Dialer{}).DialContext, "http/1.1")}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

func TestClientVerifiesWithItsCA(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	srv := tlsServer(t, ca, nil)

	c, err := certs.NewClient(certs.ClientFiles{CA: ca.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, c, srv.URL); err != nil {
		t.Fatalf("with the CA: %v", err)
	}

	sys, err := certs.NewClient(certs.ClientFiles{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, sys, srv.URL); err == nil {
		t.Fatal("the system roots accepted the test CA's certificate")
	}

	wrong, err := certs.NewClient(certs.ClientFiles{CA: ca.CertFile, ServerName: "elsewhere.example"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, wrong, srv.URL); err == nil {
		t.Fatal("a certificate without the server name was accepted")
	}

	insecure, err := certs.NewClient(certs.ClientFiles{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, insecure, srv.URL); err != nil {
		t.Fatalf("insecure_skip_verify: %v", err)
	}
}

func TestClientCertificateReload(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	clients := certstest.NewCA(t)
	srv := tlsServer(t, ca, clients)

	none, err := certs.NewClient(certs.ClientFiles{CA: ca.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, none, srv.URL); err == nil {
		t.Fatal("the server took a call without a client certificate")
	}

	first := clients.Leaf(t, "first", certstest.LeafOptions{Names: []string{"first"}, Client: true})
	files := certs.ClientFiles{CA: ca.CertFile, Cert: first.CertFile, Key: first.KeyFile}
	c, err := certs.NewClient(files)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := get(t, c, srv.URL); err != nil || got != "first" {
		t.Fatalf("got %q, %v; want first", got, err)
	}

	// Rotated on disk: the same files hold a new pair.
	clients.Leaf(t, "first", certstest.LeafOptions{Names: []string{"second"}, Client: true})
	if got, err := get(t, c, srv.URL); err != nil || got != "first" {
		t.Fatalf("before Reload got %q, %v; want the pair read first", got, err)
	}
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, err := get(t, c, srv.URL); err != nil || got != "second" {
		t.Fatalf("after Reload got %q, %v; want second", got, err)
	}

	// A broken pair is refused and the one in use stays.
	if err := os.WriteFile(files.Key, []byte("broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	var fe *certs.FileError
	if err := c.Reload(); !errors.As(err, &fe) {
		t.Fatalf("Reload of a broken pair: %v, want a FileError", err)
	}
	if got, err := get(t, c, srv.URL); err != nil || got != "second" {
		t.Fatalf("after a failed Reload got %q, %v; want second", got, err)
	}
}

func TestDialTLSKeepsDialErrors(t *testing.T) {
	t.Parallel()
	c, err := certs.NewClient(certs.ClientFiles{})
	if err != nil {
		t.Fatal(err)
	}
	sentinel := errors.New("refused")
	dial := c.DialTLS(func(context.Context, string, string) (net.Conn, error) { return nil, sentinel })
	if _, err := dial(context.Background(), "tcp", "127.0.0.1:1"); err != sentinel {
		t.Fatalf("err = %v, want the dialer's own error", err)
	}
}
