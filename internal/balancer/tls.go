package balancer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/bridge"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// loadTLS reads the certificates of gs's front door: nil when it does not
// terminate TLS. A file that cannot be read, does not parse or a key that
// does not match its certificate is a *protocol.FieldError naming it.
func (b *Balancer) loadTLS(gs protocol.Group) (*certs.ServerSet, error) {
	if gs.Protocol != protocol.ProtocolHTTP || !gs.TLS.Enabled() {
		return nil, nil
	}
	set, err := certs.NewServerSet(serverConfig(gs), certs.ServerOptions{Logger: b.log.With("group", gs.Name), Clock: b.clock})
	if err != nil {
		return nil, tlsFieldError(gs, err)
	}
	return set, nil
}

// serverConfig is the certificate set of gs's front door.
func serverConfig(gs protocol.Group) certs.ServerConfig {
	t := gs.TLS
	cfg := certs.ServerConfig{Listener: "group " + gs.Name, Cert: t.Cert, Key: t.Key, ClientCA: t.ClientCA, MinVersion: t.MinVersion, ALPN: httpdoor.ALPN}
	for _, p := range t.Certs {
		cfg.Certs = append(cfg.Certs, certs.PairFiles{Cert: p.Cert, Key: p.Key})
	}
	return cfg
}

// tlsFieldError names the tls setting of gs whose files cannot be used.
func tlsFieldError(gs protocol.Group, err error) error {
	return &protocol.FieldError{Field: "tls", Value: gs.TLS.Cert, Allowed: "its files must be readable PEM, each key matching its certificate (" + err.Error() + ")"}
}

// sameTLS reports whether two groups' front doors read the same
// certificate files the same way.
func sameTLS(a, b protocol.Group) bool {
	return a.Protocol == b.Protocol && reflect.DeepEqual(a.TLS, b.TLS)
}

// tlsConfigLocked is the front door's TLS configuration (nil: plain).
// Caller holds g.mu.
func (g *group) tlsConfigLocked() *tls.Config {
	if g.tls == nil {
		return nil
	}
	return g.tls.TLSConfig()
}

// setTLSLocked makes set the group's certificates: the running front
// door terminates TLS with them on its next connections. Caller holds
// g.mu.
func (g *group) setTLSLocked(set *certs.ServerSet) {
	g.b.certMetrics.Remove(g.tls)
	g.tls = set
	g.b.certMetrics.Add(set)
	switch fd := g.fd.(type) {
	case *httpdoor.Server:
		fd.SetTLS(g.tlsConfigLocked())
	case *bridge.Server:
		fd.SetTLS(g.tlsConfigLocked())
	}
}

// WatchCertificates adds set (the admin API's, say) to the certificates
// ReloadCertificates and the poll re-read, and to the metrics.
func (b *Balancer) WatchCertificates(set *certs.ServerSet) {
	b.mu.Lock()
	b.extraCerts = append(b.extraCerts, set)
	b.mu.Unlock()
	b.certMetrics.Add(set)
}

// UnwatchCertificates undoes WatchCertificates(set): a reload that replaced
// or removed the admin API's certificates.
func (b *Balancer) UnwatchCertificates(set *certs.ServerSet) {
	b.mu.Lock()
	b.extraCerts = slices.DeleteFunc(b.extraCerts, func(s *certs.ServerSet) bool { return s == set })
	b.mu.Unlock()
	b.certMetrics.Remove(set)
}

// SetAdminURL replaces the admin API's public base URL told to replicas
// that register from now on (Options.AdminURL), as a reload that turns the
// admin API's TLS on or off does.
func (b *Balancer) SetAdminURL(u string) { b.adminURL.Store(&u) }

// ReloadCertificates re-reads every certificate in use: the front doors',
// those given to WatchCertificates, and the client pairs of the groups'
// replica_tls (ReloadReplicaTLS). A pair that parses and matches
// replaces the one served, for new handshakes; one that does not keeps the
// one served (its reason logged once). The error joins every reason. Safe
// to call from a SIGHUP handler or POST /v1/reload; the files are also
// polled every certs.PollInterval (pollCertificates).
func (b *Balancer) ReloadCertificates() error {
	b.mu.RLock()
	sets := append([]*certs.ServerSet(nil), b.extraCerts...)
	names := make([]string, len(sets))
	for _, g := range b.groups {
		g.mu.Lock()
		if g.tls != nil {
			sets = append(sets, g.tls)
			names = append(names, "group "+g.name)
		}
		g.mu.Unlock()
	}
	b.mu.RUnlock()
	// The client pairs of every group's replica_tls too (replicatls.go).
	errs := []error{b.ReloadReplicaTLS()}
	for i, s := range sets {
		if err := s.Reload(); err != nil {
			if names[i] != "" {
				err = fmt.Errorf("%s: %w", names[i], err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pollCertificates reloads the certificates at every certs.PollInterval on
// the balancer's clock until Shutdown.
func (b *Balancer) pollCertificates(done chan<- struct{}) {
	defer close(done)
	t := b.clock.NewTicker(certs.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C():
			_ = b.ReloadCertificates() // each reason is logged once
		}
	}
}

// CertificateMetrics exports fulcrum_tls_cert_not_after_timestamp_seconds
// for every certificate in use.
func (b *Balancer) CertificateMetrics() prometheus.Collector { return b.certMetrics }

// CheckTLS reads the certificate files of gs's front door as the group
// would, without building it: `serve --check`, the config file's checks
// and a reload before it changes anything. Its error is loadTLS's.
func CheckTLS(gs protocol.Group) error {
	if gs.Protocol != protocol.ProtocolHTTP || !gs.TLS.Enabled() {
		return nil
	}
	if _, err := certs.NewServerSet(serverConfig(gs), certs.ServerOptions{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		return tlsFieldError(gs, err)
	}
	return nil
}
