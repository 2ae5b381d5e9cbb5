package registry

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// GroupAdvertise is the advertise URL derived for g's front door listening
// on addr: AdvertiseFor, with https:// for HTTP groups that terminate TLS.
func GroupAdvertise(g protocol.Group, addr string) string {
	a := AdvertiseFor(g.Protocol, addr)
	if g.Protocol == protocol.ProtocolHTTP && g.TLS.Enabled() {
		a = "https://" + strings.TrimPrefix(a, "http://")
	}
	return a
}

// validateFrontDoorTLS checks the group's tls key: files named (their
// contents are read when the front door starts), http groups only.
func validateFrontDoorTLS(g protocol.Group) error {
	t := g.TLS
	if !t.Enabled() {
		return nil
	}
	fe := func(field string, v any, allowed string) error {
		return &protocol.FieldError{Field: field, Value: v, Allowed: allowed}
	}
	if g.Protocol != protocol.ProtocolHTTP {
		return fe("tls", "(set)", "is only allowed with protocol http (this group is "+g.Protocol+")")
	}
	if err := checkPath(t.Cert); err != "" {
		return fe("tls.cert", t.Cert, err)
	}
	if err := checkPath(t.Key); err != "" {
		return fe("tls.key", t.Key, err)
	}
	for i, p := range t.Certs {
		if err := checkPath(p.Cert); err != "" {
			return fe(fmt.Sprintf("tls.certs[%d].cert", i), p.Cert, err)
		}
		if err := checkPath(p.Key); err != "" {
			return fe(fmt.Sprintf("tls.certs[%d].key", i), p.Key, err)
		}
	}
	if t.ClientCA != "" {
		if err := checkPath(t.ClientCA); err != "" {
			return fe("tls.client_ca", t.ClientCA, err)
		}
	}
	if t.MinVersion != "" && !slices.Contains(protocol.TLSMinVersions, t.MinVersion) {
		return fe("tls.min_version", t.MinVersion, "must be one of: "+strings.Join(protocol.TLSMinVersions, ", "))
	}
	if strings.HasPrefix(g.Advertise, "http://") {
		return fe("advertise", g.Advertise, "must be an https:// URL when tls is set")
	}
	return nil
}

// checkPath checks a certificate or key file path; it returns what is
// allowed, or "" when p is fine.
func checkPath(p string) string {
	if strings.TrimSpace(p) == "" {
		return "must be the path of a PEM file (required when tls is set)"
	}
	if strings.ContainsFunc(p, unicode.IsControl) || len(p) > 4096 {
		return "must be a file path of at most 4096 characters, without control characters"
	}
	return ""
}
