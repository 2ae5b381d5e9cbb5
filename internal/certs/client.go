package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// ClientFiles are the settings of the TLS client side of a connection:
// toward replicas (a group's replica_tls) or toward the admin API (the
// CLI's --cacert, --cert and --key). Files are PEM.
type ClientFiles struct {
	// CA verifies the server's certificate; empty: the system roots.
	CA string
	// SystemRoots, with CA set, verifies with the system roots as well
	// as CA's certificates (when the system roots cannot be read, with
	// CA's alone).
	SystemRoots bool
	// Cert and Key are the client certificate presented to servers that
	// ask for one (mTLS); both or neither.
	Cert, Key string
	// ServerName is the name verified in the server's certificate and sent
	// by SNI; empty: the host of the address dialled.
	ServerName string
	// InsecureSkipVerify accepts any server certificate. For tests only.
	InsecureSkipVerify bool
}

// FileError is a client file that cannot be used: Field says which
// setting (ca, cert, key), Path the file, Err why.
type FileError struct {
	Field string
	Path  string
	Err   error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("certs: %s %q: %v", e.Field, e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// ErrCertWithoutKey is a client certificate given without its key, or a
// key without its certificate.
var ErrCertWithoutKey = errors.New("certs: cert and key must be given together")

// HandshakeTimeout bounds a TLS handshake made by Client.DialTLS (as
// http.Transport's default TLSHandshakeTimeout).
const HandshakeTimeout = 10 * time.Second

// Client is a TLS client configuration read from files. The CA is read
// once, by NewClient; the client certificate pair is read by NewClient and
// again by Reload, and every handshake presents the pair last read (through
// tls.Config.GetClientCertificate), so a rotated pair is used by the next
// connection without rebuilding anything that holds a Config. Safe for
// concurrent use.
type Client struct {
	files ClientFiles
	roots *x509.CertPool // nil: the system roots
	pair  atomic.Pointer[tls.Certificate]
}

// NewClient reads the files f names. Its errors are *FileError (a file that
// cannot be read or parsed, a pair whose key does not match) or
// ErrCertWithoutKey.
func NewClient(f ClientFiles) (*Client, error) {
	if (f.Cert == "") != (f.Key == "") {
		return nil, ErrCertWithoutKey
	}
	c := &Client{files: f}
	if f.CA != "" {
		var base *x509.CertPool
		if f.SystemRoots {
			base, _ = x509.SystemCertPool()
		}
		pool, err := readPool(f.CA, base)
		if err != nil {
			return nil, &FileError{Field: "ca", Path: f.CA, Err: err}
		}
		c.roots = pool
	}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// readPool reads the PEM certificates of path into a copy of base (nil:
// a new pool).
func readPool(path string, base *x509.CertPool) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	pool := x509.NewCertPool()
	if base != nil {
		pool = base.Clone()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate in it")
	}
	return pool, nil
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Reload reads the client certificate pair again (nothing when none is
// set). On error the pair in use stays and the error says why: a
// *FileError naming the cert or the key.
func (c *Client) Reload() error {
	f := c.files
	if f.Cert == "" {
		return nil
	}
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return &FileError{Field: "cert", Path: f.Cert, Err: unwrapPath(err)}
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return &FileError{Field: "key", Path: f.Key, Err: unwrapPath(err)}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return &FileError{Field: "cert", Path: f.Cert, Err: fmt.Errorf("with key %s: %w", f.Key, err)}
	}
	c.pair.Store(&pair)
	return nil
}

// Files are the settings c was made from.
func (c *Client) Files() ClientFiles { return c.files }

// Config returns a new tls.Config for one client (callers may change it):
// c's roots, server name and verification, and the pair last read.
func (c *Client) Config() *tls.Config {
	cfg := &tls.Config{
		RootCAs:            c.roots,
		ServerName:         c.files.ServerName,
		InsecureSkipVerify: c.files.InsecureSkipVerify,
		MinVersion:         tls.VersionTLS12,
	}
	if c.files.Cert != "" {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return c.pair.Load(), nil
		}
	}
	return cfg
}

// DialFunc opens a connection, as net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// DialTLS returns a function for http.Transport.DialTLSContext: it opens
// a connection with dial (whose errors it returns as they are, so that a
// caller can tell a failure to connect), then makes the TLS handshake with
// c's Config, offering nextProtos by ALPN and naming the host of addr when
// c sets no server name. The handshake is bounded by ctx and by
// HandshakeTimeout; on failure the connection is closed.
func (c *Client) DialTLS(dial DialFunc, nextProtos ...string) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := c.Config()
		cfg.NextProtos = nextProtos
		if cfg.ServerName == "" {
			host, _, serr := net.SplitHostPort(addr)
			if serr != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		hctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
		defer cancel()
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(hctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("certs: tls handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}
