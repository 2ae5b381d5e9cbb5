package bench

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// BenchCert is the one certificate of a TLS bench: ECDSA P-256,
// self-signed for 127.0.0.1 and localhost, served by every TLS
// configuration alike.
type BenchCert struct {
	// CertFile and KeyFile are PEM files (fulcrum's tls.cert and
	// tls.key); Bundle holds both (HAProxy's crt).
	CertFile, KeyFile, Bundle string
	// Client is what the bench's clients use: the certificate as their
	// only root, TLS 1.3 only, X25519 only, ALPN http/1.1, and no
	// session cache (every new connection is a full handshake).
	Client *tls.Config
}

// WriteBenchCert makes the TLS bench's certificate in dir.
func WriteBenchCert(dir string) (*BenchCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "fulcrum bench"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	bc := &BenchCert{CertFile: filepath.Join(dir, "bench.pem"), KeyFile: filepath.Join(dir, "bench-key.pem"), Bundle: filepath.Join(dir, "bench-bundle.pem")}
	for _, f := range []struct {
		path string
		data []byte
	}{{bc.CertFile, certPEM}, {bc.KeyFile, keyPEM}, {bc.Bundle, append(append([]byte{}, certPEM...), keyPEM...)}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	bc.Client = &tls.Config{
		RootCAs:          pool,
		MinVersion:       tls.VersionTLS13,
		MaxVersion:       tls.VersionTLS13,
		CurvePreferences: []tls.CurveID{tls.X25519},
		NextProtos:       []string{"http/1.1"},
	}
	return bc, nil
}

// HAProxyTLS is how the TLS bench's HAProxy ran.
type HAProxyTLS struct {
	// NBThread is the nbthread set in its configuration.
	NBThread int `json:"nbthread"`
	// OpenSSL are the OpenSSL lines of `haproxy -vv` (built with,
	// running on).
	OpenSSL []string `json:"openssl"`
}

// StartHAProxyTLS starts HAProxy as StartHAProxy does, terminating TLS
// with cert (TLS 1.3 only, X25519, ALPN http/1.1) and nbthread threads.
func (e *Env) StartHAProxyTLS(ctx context.Context, backends []string, cert *BenchCert, nbthread int) (*Proxy, error) {
	if e.HAProxy.Path == "" {
		return nil, fmt.Errorf("bench: %s", e.HAProxy.Missing)
	}
	var lastErr error
	for range 3 {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		name := e.UniqueName("haproxy-tls")
		cfg := haproxyConfig(addr, backends)
		cfg = strings.Replace(cfg, "global\n", fmt.Sprintf("global\n    nbthread %d\n", nbthread), 1)
		cfg = strings.Replace(cfg, "    bind "+addr+"\n", fmt.Sprintf("    bind %s ssl crt %s alpn http/1.1 ssl-min-ver TLSv1.3 curves X25519\n", addr, cert.Bundle), 1)
		path := filepath.Join(e.Dir, "logs", name+".cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			return nil, err
		}
		p, err := e.Start(ProcSpec{Name: name, Path: e.HAProxy.Path, Args: []string{"-db", "-f", path}})
		if err != nil {
			return nil, err
		}
		url := "https://" + addr
		if lastErr = waitHTTP(ctx, p, url+"/healthz", cert.Client, 20*time.Second); lastErr != nil {
			p.Stop(0)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		e.Logf("haproxy (TLS) %s: %s, pid %d, nbthread %d", name, url, p.Pid(), nbthread)
		return &Proxy{URL: url, Proc: p}, nil
	}
	return nil, lastErr
}

// HAProxyOpenSSL returns the OpenSSL lines of `haproxy -vv`.
func (e *Env) HAProxyOpenSSL(ctx context.Context) ([]string, error) {
	if e.HAProxy.Path == "" {
		return nil, fmt.Errorf("bench: %s", e.HAProxy.Missing)
	}
	out, err := exec.CommandContext(ctx, e.HAProxy.Path, "-vv").Output()
	if err != nil {
		return nil, fmt.Errorf("bench: haproxy -vv: %w", err)
	}
	return openSSLLines(string(out)), nil
}

// openSSLLines picks the OpenSSL version lines of `haproxy -vv`'s output.
func openSSLLines(out string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.Contains(l, "OpenSSL version") {
			lines = append(lines, l)
		}
	}
	return lines
}

// HandshakeRate makes n full TLS handshakes with addr one after another
// (a new connection each, no session resumption) and returns how many it
// completed per second; the first failure ends it with an error.
func HandshakeRate(ctx context.Context, addr string, conf *tls.Config, n int) (float64, error) {
	conf = conf.Clone()
	conf.ClientSessionCache = nil
	d := &net.Dialer{Timeout: 5 * time.Second}
	start := time.Now()
	for i := range n {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		c, err := tls.DialWithDialer(d, "tcp", addr, conf)
		if err != nil {
			return 0, fmt.Errorf("bench: handshake %d with %s: %w", i+1, addr, err)
		}
		if c.ConnectionState().DidResume {
			c.Close()
			return 0, fmt.Errorf("bench: handshake %d with %s resumed a session", i+1, addr)
		}
		c.Close()
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
