package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
)

// PollInterval is how often Run looks at the certificate files.
const PollInterval = 10 * time.Second

// Minimum TLS versions a ServerConfig allows (min_version).
const (
	Version12 = "1.2"
	Version13 = "1.3"
	// DefaultMinVersion is min_version's default.
	DefaultMinVersion = Version12
)

// MinVersions are the values min_version allows.
var MinVersions = []string{Version12, Version13}

// PairFiles are a certificate and its private key, as PEM file paths.
type PairFiles struct {
	Cert, Key string
}

// ServerConfig is a TLS listener's certificates, as file paths.
type ServerConfig struct {
	// Listener names the listener in logs and in the metric's listener
	// label, such as "group web" or "admin".
	Listener string
	// Cert and Key are the default pair: served when the client's SNI
	// matches no pair of Certs (or it sends none). Required.
	Cert, Key string
	// Certs are more pairs, each served to clients whose SNI names a host
	// its certificate covers.
	Certs []PairFiles
	// ClientCA, when set, is a PEM bundle of CAs: clients must present a
	// certificate one of them signed.
	ClientCA string
	// MinVersion is "1.2" (default when empty) or "1.3".
	MinVersion string
	// ALPN lists the application protocols offered, preferred first.
	ALPN []string
}

// ServerOptions are a ServerSet's seams. The zero value is usable.
type ServerOptions struct {
	// Logger receives reload failures (once per reason) and swaps;
	// slog.Default() when nil.
	Logger *slog.Logger
	// Clock tells whether certificates have expired; the system clock
	// when nil.
	Clock clock.Clock
	// ReadFile reads a file (following symlinks); os.ReadFile when nil.
	ReadFile func(path string) ([]byte, error)
}

// ServerSet is a TLS listener's certificates, reloadable while it serves.
// Safe for concurrent use.
type ServerSet struct {
	cfg  ServerConfig
	log  *slog.Logger
	now  func() time.Time
	read func(string) ([]byte, error)
	min  uint16

	// mu serialises reloads; it guards pairs' states and caPEM.
	mu    sync.Mutex
	pairs []*pairState // the default first, then cfg.Certs
	caPEM []byte
	// caFailed is the reason the client CA file was last refused.
	caFailed string

	// cur is what handshakes read: rebuilt on every swap.
	cur atomic.Pointer[served]
	tls *tls.Config
}

// served is one generation of a ServerSet's certificates.
type served struct {
	certs []*tls.Certificate // parallel to ServerSet.pairs
	conf  *tls.Config
}

// NewServerSet reads every file of cfg. A pair that cannot be read, does
// not parse or whose key does not match its certificate is an error naming
// its files (the listener must not start); an expired certificate is
// logged as an error and served.
func NewServerSet(cfg ServerConfig, opts ServerOptions) (*ServerSet, error) {
	s := &ServerSet{cfg: cfg, log: opts.Logger, read: opts.ReadFile, now: clock.Or(opts.Clock).Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.read == nil {
		s.read = os.ReadFile
	}
	var err error
	if s.min, err = ParseMinVersion(cfg.MinVersion); err != nil {
		return nil, err
	}
	if cfg.Cert == "" || cfg.Key == "" {
		return nil, errors.New("certs: " + cfg.Listener + ": cert and key are required")
	}
	files := append([]PairFiles{{Cert: cfg.Cert, Key: cfg.Key}}, cfg.Certs...)
	for _, f := range files {
		p := &pairState{files: f}
		certPEM, keyPEM, rerr := s.readPair(f)
		if d := p.step(certPEM, keyPEM, rerr); d.err != nil {
			return nil, d.err
		}
		s.pairs = append(s.pairs, p)
	}
	var pool *x509.CertPool
	if cfg.ClientCA != "" {
		data, err := s.read(cfg.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("certs: client_ca: %w", err)
		}
		if pool, err = parseCA(cfg.ClientCA, data); err != nil {
			return nil, err
		}
		s.caPEM = data
	}
	s.publishLocked(pool)
	for _, p := range s.pairs {
		s.warnExpired(p)
	}
	s.tls = &tls.Config{
		MinVersion: s.min,
		NextProtos: cfg.ALPN,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.cur.Load().conf, nil
		},
	}
	return s, nil
}

// ParseMinVersion maps a min_version ("" for the default) to its
// crypto/tls constant.
func ParseMinVersion(v string) (uint16, error) {
	switch v {
	case "", Version12:
		return tls.VersionTLS12, nil
	case Version13:
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("certs: min_version %q: must be one of: 1.2, 1.3", v)
}

// readPair reads a pair's files.
func (s *ServerSet) readPair(f PairFiles) (certPEM, keyPEM []byte, err error) {
	if certPEM, err = s.read(f.Cert); err != nil {
		return nil, nil, fmt.Errorf("certs: cert: %w", err)
	}
	if keyPEM, err = s.read(f.Key); err != nil {
		return nil, nil, fmt.Errorf("certs: key: %w", err)
	}
	return certPEM, keyPEM, nil
}

// TLSConfig is the listener's configuration: each handshake takes the
// certificates current at its start.
func (s *ServerSet) TLSConfig() *tls.Config { return s.tls }

// Config is what the set was made from.
func (s *ServerSet) Config() ServerConfig { return s.cfg }

// publishLocked makes the served pairs (and pool, the client CAs; nil for
// none) what new handshakes see. Caller holds s.mu (or s is not shared).
func (s *ServerSet) publishLocked(pool *x509.CertPool) {
	sv := &served{certs: make([]*tls.Certificate, len(s.pairs))}
	for i, p := range s.pairs {
		sv.certs[i] = p.served
	}
	conf := &tls.Config{
		MinVersion:     s.min,
		NextProtos:     s.cfg.ALPN,
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return sv.pick(h.ServerName), nil },
	}
	if pool == nil {
		if old := s.cur.Load(); old != nil {
			pool = old.conf.ClientCAs
		}
	}
	if pool != nil {
		conf.ClientAuth = tls.RequireAndVerifyClientCert
		conf.ClientCAs = pool
	}
	sv.conf = conf
	s.cur.Store(sv)
}

// pick is the pair for a client's SNI: the first whose certificate covers
// name, else the default.
func (sv *served) pick(name string) *tls.Certificate {
	if name != "" {
		for _, c := range sv.certs {
			if c.Leaf != nil && c.Leaf.VerifyHostname(name) == nil {
				return c
			}
		}
	}
	return sv.certs[0]
}

// Reload reads every file again. A pair whose files parse and match
// replaces the one served; a pair that does not keeps the one served, and
// its reason is logged once (the next Reload tries again). The error
// joins every reason, logged or not.
func (s *ServerSet) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	swapped := false
	for _, p := range s.pairs {
		certPEM, keyPEM, rerr := s.readPair(p.files)
		d := p.step(certPEM, keyPEM, rerr)
		if d.err != nil {
			errs = append(errs, d.err)
			if d.logErr {
				s.log.Error("certificate not reloaded; serving the previous one", "listener", s.cfg.Listener, "cert", p.files.Cert, "err", d.err)
			}
			continue
		}
		if d.swap != nil {
			swapped = true
			s.log.Info("certificate reloaded", "listener", s.cfg.Listener, "cert", p.files.Cert, "serial", d.swap.Leaf.SerialNumber.String(), "not_after", d.swap.Leaf.NotAfter)
			s.warnExpired(p)
		}
	}
	pool, caChanged, err := s.reloadCALocked()
	if err != nil {
		errs = append(errs, err)
	}
	if swapped || caChanged {
		s.publishLocked(pool)
	}
	return errors.Join(errs...)
}

// reloadCALocked reads the client CA file again: changed reports a new
// pool (pool) to publish. A file that does not parse keeps the old pool.
// Caller holds s.mu.
func (s *ServerSet) reloadCALocked() (pool *x509.CertPool, changed bool, err error) {
	if s.cfg.ClientCA == "" {
		return nil, false, nil
	}
	data, err := s.read(s.cfg.ClientCA)
	if err == nil {
		if string(data) == string(s.caPEM) {
			s.caFailed = ""
			return nil, false, nil
		}
		if pool, err = parseCA(s.cfg.ClientCA, data); err == nil {
			s.caPEM, s.caFailed = data, ""
			s.log.Info("client CA reloaded", "listener", s.cfg.Listener, "client_ca", s.cfg.ClientCA)
			return pool, true, nil
		}
	} else {
		err = fmt.Errorf("certs: client_ca: %w", err)
	}
	if err.Error() != s.caFailed {
		s.caFailed = err.Error()
		s.log.Error("client CA not reloaded; using the previous one", "listener", s.cfg.Listener, "client_ca", s.cfg.ClientCA, "err", err)
	}
	return nil, false, err
}

// warnExpired logs an error when p's served certificate has expired (or
// is not valid yet): it is served all the same.
func (s *ServerSet) warnExpired(p *pairState) {
	if expired(p.served, s.now()) {
		l := p.served.Leaf
		s.log.Error("certificate is not valid now; serving it anyway", "listener", s.cfg.Listener, "cert", p.files.Cert, "not_before", l.NotBefore, "not_after", l.NotAfter)
	}
}

// Run reloads at every tick of t until ctx ends; it stops t.
func (s *ServerSet) Run(ctx context.Context, t clock.Ticker) {
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			_ = s.Reload() // reasons are logged once by Reload
		}
	}
}

// Expiry is when one served certificate stops being valid.
type Expiry struct {
	// Listener is the set's ServerConfig.Listener; Name the certificate's
	// file.
	Listener, Name string
	NotAfter       time.Time
}

// Expiries lists the served certificates' ends, the default pair first.
func (s *ServerSet) Expiries() []Expiry {
	sv := s.cur.Load()
	out := make([]Expiry, 0, len(sv.certs))
	for i, c := range sv.certs {
		if c.Leaf == nil {
			continue
		}
		out = append(out, Expiry{Listener: s.cfg.Listener, Name: s.pairs[i].files.Cert, NotAfter: c.Leaf.NotAfter})
	}
	return out
}
