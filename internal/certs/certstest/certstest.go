// Package certstest makes certificates at test time: a throwaway CA and
// leaf certificates it signs, written as PEM files in a test's temporary
// directory. Keys are ECDSA P-256. Nothing here is fit for production.
package certstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertFile is the CA certificate in PEM, for --cacert and client_ca.
	CertFile string
	dir      string
}

// Pair is a leaf certificate and its key, in memory and on disk.
type Pair struct {
	Cert     *x509.Certificate
	TLS      tls.Certificate
	CertFile string
	KeyFile  string
}

// LeafOptions shape a leaf certificate. Zero values give a server
// certificate for localhost and 127.0.0.1, valid from an hour ago for a day.
type LeafOptions struct {
	// Names are DNS names or IP addresses (parsed as IPs when they are).
	Names []string
	// Client makes a client certificate (ExtKeyUsageClientAuth) instead.
	Client    bool
	NotBefore time.Time
	NotAfter  time.Time
}

var serial atomic.Int64

// NewCA makes a CA whose files live in t.TempDir().
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: "fulcrum test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("certstest: create CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("certstest: parse CA: %v", err)
	}
	dir := t.TempDir()
	ca := &CA{Cert: cert, Key: key, dir: dir, CertFile: filepath.Join(dir, "ca.pem")}
	writePEM(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Pool is a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf makes a certificate signed by the CA and writes it, with its key,
// as name.pem and name-key.pem in the CA's directory (overwriting them:
// calling Leaf again with the same name is how a test rotates a pair).
func (ca *CA) Leaf(t testing.TB, name string, o LeafOptions) Pair {
	t.Helper()
	if len(o.Names) == 0 {
		o.Names = []string{"localhost", "127.0.0.1"}
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: o.Names[0]},
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if o.Client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, n := range o.Names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatalf("certstest: create %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("certstest: parse %s: %v", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("certstest: marshal key %s: %v", name, err)
	}
	p := Pair{
		Cert:     cert,
		TLS:      tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert},
		CertFile: filepath.Join(ca.dir, name+".pem"),
		KeyFile:  filepath.Join(ca.dir, name+"-key.pem"),
	}
	writePEM(t, p.CertFile, "CERTIFICATE", der)
	writePEM(t, p.KeyFile, "PRIVATE KEY", keyDER)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("certstest: generate key: %v", err)
	}
	return key
}

// writePEM writes atomically (a temporary file renamed over the target), so
// that a balancer polling the file never reads half of it.
func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("certstest: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatalf("certstest: %v", err)
	}
}
