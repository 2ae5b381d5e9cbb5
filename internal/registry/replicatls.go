package registry

import (
	"strings"
	"unicode"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// validateReplicaTLS checks what can be checked of g.ReplicaTLS without
// reading its files (the balancer reads them when it builds the group):
// HTTP groups only, cert and key together, paths without control
// characters.
func validateReplicaTLS(g protocol.Group) error {
	t := g.ReplicaTLS
	fe := func(field string, v any, allowed string) error {
		return &protocol.FieldError{Field: "replica_tls." + field, Value: v, Allowed: allowed}
	}
	if t == (protocol.ReplicaTLS{}) {
		return nil
	}
	if g.Protocol != protocol.ProtocolHTTP {
		return &protocol.FieldError{Field: "replica_tls", Value: t, Allowed: "is only allowed with protocol http"}
	}
	for _, f := range []struct{ name, v string }{{"ca", t.CA}, {"cert", t.Cert}, {"key", t.Key}, {"server_name", t.ServerName}} {
		if strings.ContainsFunc(f.v, unicode.IsControl) || (f.v != "" && strings.TrimSpace(f.v) == "") {
			return fe(f.name, f.v, "must be a file path (a host name for server_name) without control characters")
		}
	}
	if t.Cert != "" && t.Key == "" {
		return fe("key", t.Key, "must be set when replica_tls.cert is (the client certificate's private key)")
	}
	if t.Key != "" && t.Cert == "" {
		return fe("cert", t.Cert, "must be set when replica_tls.key is (the client certificate)")
	}
	return nil
}
