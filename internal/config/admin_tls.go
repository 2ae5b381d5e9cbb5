package config

import (
	"strings"
	"unicode"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// AdminTLS makes the admin API listen with TLS (key admin_tls). Files are
// PEM paths, reloaded as the front doors' are.
type AdminTLS struct {
	// Cert and Key are the admin API's certificate and key; required
	// when admin_tls is set.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// ClientCA, when set, requires client certificates signed by one of
	// its CAs (mTLS).
	ClientCA string `yaml:"client_ca"`
}

// Enabled reports whether admin_tls is set.
func (a AdminTLS) Enabled() bool { return a != AdminTLS{} }

// validate checks admin_tls.
func (a AdminTLS) validate() error {
	if !a.Enabled() {
		return nil
	}
	for _, f := range []struct{ key, v string }{{"admin_tls.cert", a.Cert}, {"admin_tls.key", a.Key}} {
		if strings.TrimSpace(f.v) == "" {
			return &protocol.FieldError{Field: f.key, Value: f.v, Allowed: "must be the path of a PEM file (required when admin_tls is set)"}
		}
	}
	for _, f := range []struct{ key, v string }{{"admin_tls.cert", a.Cert}, {"admin_tls.key", a.Key}, {"admin_tls.client_ca", a.ClientCA}} {
		if strings.ContainsFunc(f.v, unicode.IsControl) || len(f.v) > 4096 {
			return &protocol.FieldError{Field: f.key, Value: f.v, Allowed: "must be a file path of at most 4096 characters, without control characters"}
		}
	}
	return nil
}
