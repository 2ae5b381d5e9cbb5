package cli

import (
	"fmt"
	"log/slog"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// adminALPN is what the admin API offers over TLS.
var adminALPN = []string{"h2", "http/1.1"}

// loadCertificates reads every certificate file cfg names before anything
// is opened or bound: the admin API's set (nil without admin_tls) is
// returned; the groups' are only checked here (the balancer reads them
// again when it builds their front doors). An error is a *config.Error
// naming the file's key and the certificate file; serve exits 2 on it.
func loadCertificates(path string, cfg config.File, log *slog.Logger) (*certs.ServerSet, error) {
	for i, g := range cfg.Groups {
		if g.Protocol != protocol.ProtocolHTTP || !g.TLS.Enabled() {
			continue
		}
		c := certs.ServerConfig{Listener: "group " + g.Name, Cert: g.TLS.Cert, Key: g.TLS.Key, ClientCA: g.TLS.ClientCA, MinVersion: g.TLS.MinVersion}
		for _, p := range g.TLS.Certs {
			c.Certs = append(c.Certs, certs.PairFiles{Cert: p.Cert, Key: p.Key})
		}
		if _, err := certs.NewServerSet(c, certs.ServerOptions{Logger: slog.New(slog.DiscardHandler)}); err != nil {
			return nil, &config.Error{File: path, Key: fmt.Sprintf("groups[%d].tls", i), Problem: config.ProblemInvalid, Value: fmt.Sprintf("%q", g.TLS.Cert), Allowed: err.Error()}
		}
	}
	a := cfg.AdminTLS
	if !a.Enabled() {
		return nil, nil
	}
	set, err := certs.NewServerSet(certs.ServerConfig{Listener: "admin", Cert: a.Cert, Key: a.Key, ClientCA: a.ClientCA, ALPN: adminALPN}, certs.ServerOptions{Logger: log})
	if err != nil {
		return nil, &config.Error{File: path, Key: "admin_tls", Problem: config.ProblemInvalid, Value: fmt.Sprintf("%q", a.Cert), Allowed: err.Error()}
	}
	return set, nil
}
