package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// pairState is what a ServerSet knows of one certificate pair: the pair it
// serves, the file contents it was made from, and the reason the last
// attempt to replace it failed. Its decisions are pure (bytes in, decision
// out). Not safe for concurrent use.
type pairState struct {
	files PairFiles
	// served is the pair handshakes get; nil until the first success.
	served *tls.Certificate
	// certPEM and keyPEM are the contents served was made from.
	certPEM, keyPEM []byte
	// failed is the reason the files were last refused ("" when they were
	// not): a reason is logged when it changes, not at every poll.
	failed string
}

// decision is the outcome of one look at a pair's files.
type decision struct {
	// swap, when not nil, replaces the served pair.
	swap *tls.Certificate
	// err is why the files were refused (nil: swapped or unchanged).
	err error
	// logErr says err is new and must be logged (once per reason).
	logErr bool
}

// step decides what to do with the contents of the pair's files (readErr:
// they could not be read). Unchanged contents keep the served pair;
// changed ones replace it only when they parse and the key matches the
// certificate.
func (p *pairState) step(certPEM, keyPEM []byte, readErr error) decision {
	var d decision
	switch {
	case readErr != nil:
		d.err = readErr
	case p.served != nil && bytes.Equal(certPEM, p.certPEM) && bytes.Equal(keyPEM, p.keyPEM):
		p.failed = ""
		return d
	default:
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			d.err = fmt.Errorf("certs: %s and %s: %w", p.files.Cert, p.files.Key, err)
			break
		}
		p.served, p.certPEM, p.keyPEM, p.failed = &cert, certPEM, keyPEM, ""
		d.swap = &cert
		return d
	}
	if reason := d.err.Error(); reason != p.failed {
		p.failed = reason
		d.logErr = true
	}
	return d
}

// expired reports whether c's leaf is outside its validity at now.
func expired(c *tls.Certificate, now time.Time) bool {
	if c == nil || c.Leaf == nil {
		return false
	}
	return now.After(c.Leaf.NotAfter) || now.Before(c.Leaf.NotBefore)
}

// parseCA reads a PEM bundle of CA certificates.
func parseCA(path string, pemData []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("certs: client_ca %s: %w", path, errNoCertificate)
	}
	return pool, nil
}

var errNoCertificate = errors.New("no PEM certificate found")
