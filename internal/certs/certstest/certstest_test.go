package certstest

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

func TestLeafVerifiesAgainstItsCA(t *testing.T) {
	ca := NewCA(t)
	p := ca.Leaf(t, "server", LeafOptions{Names: []string{"a.example", "127.0.0.1"}})
	if _, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile); err != nil {
		t.Fatalf("files do not load as a pair: %v", err)
	}
	for _, name := range []string{"a.example", "127.0.0.1"} {
		if _, err := p.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: name}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := p.Cert.Verify(x509.VerifyOptions{Roots: x509.NewCertPool(), DNSName: "a.example"}); err == nil {
		t.Error("verified without its CA")
	}
	c := ca.Leaf(t, "client", LeafOptions{Client: true})
	if _, err := c.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
}
