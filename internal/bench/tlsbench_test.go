package bench

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// The TLS bench's certificate loads as a pair, its bundle holds both, and
// a group with it generates a config fulcrum serve accepts.
func TestBenchCertAndTLSConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := WriteBenchCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile); err != nil {
		t.Fatalf("pair: %v", err)
	}
	if _, err := tls.LoadX509KeyPair(c.Bundle, c.Bundle); err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if c.Client.MinVersion != tls.VersionTLS13 || !slices.Equal(c.Client.CurvePreferences, []tls.CurveID{tls.X25519}) {
		t.Errorf("client config %+v, want TLS 1.3 and X25519 only", c.Client)
	}
	cfg := "http_engine: stdlib\n" + balancerConfig("127.0.0.1:7123", filepath.Join(dir, "data"), []GroupSpec{
		{Name: "tls", Binding: "per-request", Replicas: []string{"http://127.0.0.1:9001"}, TLS: c},
	})
	path := filepath.Join(dir, "fulcrum.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg)
	}
	if g := f.Groups[0]; g.TLS.Cert != c.CertFile || g.TLS.Key != c.KeyFile || g.TLS.MinVersion != "1.3" || f.HTTPEngine != "stdlib" {
		t.Errorf("loaded %+v, engine %s", g.TLS, f.HTTPEngine)
	}
}

func TestOpenSSLLines(t *testing.T) {
	t.Parallel()
	out := "HAProxy version 2.6.12\nBuild options :\n  TARGET  = linux-glibc\nBuilt with OpenSSL version : OpenSSL 3.0.9 30 May 2023\nRunning on OpenSSL version : OpenSSL 3.0.11 19 Sep 2023\nOpenSSL library supports TLS extensions : yes\n"
	want := []string{"Built with OpenSSL version : OpenSSL 3.0.9 30 May 2023", "Running on OpenSSL version : OpenSSL 3.0.11 19 Sep 2023"}
	if got := openSSLLines(out); !slices.Equal(got, want) {
		t.Errorf("openSSLLines = %q, want %q", got, want)
	}
}
