package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults of store.etcd.
const (
	DefaultEtcdPrefix      = "/fulcrum/"
	DefaultEtcdDialTimeout = protocol.Duration(5 * time.Second)
	DefaultEtcdSessionTTL  = protocol.Duration(3 * time.Second)
	// DefaultEtcdCompactEvery is store.etcd.compact_every's default.
	DefaultEtcdCompactEvery = protocol.Duration(5 * time.Minute)
)

// Store says where the balancer keeps its state (key store). Empty: the
// bbolt file in data_dir.
type Store struct {
	// Etcd, when set, keeps the state on etcd instead of data_dir.
	Etcd EtcdStore `yaml:"etcd"`
}

// EtcdStore is store.etcd: where etcd is and how to reach it.
type EtcdStore struct {
	// Endpoints are etcd's client URLs (http:// or https://); at least
	// one when store.etcd is set (--etcd on serve replaces them).
	Endpoints []string `yaml:"endpoints"`
	// Prefix is where fulcrum's keys live; default /fulcrum/, must start
	// and end with "/".
	Prefix string `yaml:"prefix"`
	// DialTimeout bounds the first connection (retried until it passes)
	// and every request; default 5s, range [100ms, 1m].
	DialTimeout protocol.Duration `yaml:"dial_timeout"`
	// SessionTTL is the TTL of this instance's etcd session (its lease);
	// default 3s, whole seconds in [2s, 1m].
	SessionTTL protocol.Duration `yaml:"session_ttl"`
	// CompactEvery is how often etcd's history is compacted, below what
	// every instance's watches still need (package compaction); default
	// 5m, 0 turns compaction off, else in [1s, 24h].
	CompactEvery OptionalDuration `yaml:"compact_every"`
	// Username and Password authenticate to etcd; both or neither.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// TLS is the client side of TLS to etcd.
	TLS EtcdTLS `yaml:"tls"`
	// Embedded, when set, runs an etcd member inside fulcrum serve
	// (embedded.go); Endpoints then default to its client URL.
	Embedded EtcdEmbedded `yaml:"embedded"`
}

// EtcdTLS is store.etcd.tls; files are PEM paths.
type EtcdTLS struct {
	// CA verifies etcd's certificate; empty: the system roots.
	CA string `yaml:"ca"`
	// Cert and Key are the client pair, for etcd's --client-cert-auth;
	// both or neither.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// Enabled reports whether store.etcd is set.
func (e EtcdStore) Enabled() bool {
	return len(e.Endpoints) > 0 || e.Prefix != "" || e.DialTimeout != 0 || e.SessionTTL != 0 || e.CompactEvery.Set ||
		e.Username != "" || e.Password != "" || e.TLS != EtcdTLS{} || e.Embedded.Enabled()
}

// WithDefaults fills the unset keys of e with their defaults.
func (e EtcdStore) WithDefaults() EtcdStore {
	if e.Prefix == "" {
		e.Prefix = DefaultEtcdPrefix
	}
	if e.DialTimeout == 0 {
		e.DialTimeout = DefaultEtcdDialTimeout
	}
	if e.SessionTTL == 0 {
		e.SessionTTL = DefaultEtcdSessionTTL
	}
	if !e.CompactEvery.Set {
		e.CompactEvery = OptionalDuration{Value: DefaultEtcdCompactEvery, Set: true}
	}
	return e
}

// OptionalDuration is a duration whose zero is a setting of its own (off),
// told apart from an absent key (Set false: the default applies).
type OptionalDuration struct {
	Value protocol.Duration
	Set   bool
}

// UnmarshalText reads a duration string, as protocol.Duration does.
func (o *OptionalDuration) UnmarshalText(b []byte) error {
	d, err := protocol.ParseDuration(string(b))
	if err != nil {
		return err
	}
	o.Value, o.Set = d, true
	return nil
}

// D is the duration (0 when unset or off).
func (o OptionalDuration) D() time.Duration { return o.Value.D() }

// Instance names this balancer among the instances of a cluster (key
// instance).
type Instance struct {
	// Name is unique in a cluster; default the host name.
	Name string `yaml:"name"`
	// AdminURL is where the other instances reach this one's admin API;
	// default the admin listener's URL.
	AdminURL string `yaml:"admin_url"`
	// PeerCA is a PEM file of the CA certificates that the other
	// instances' admin certificates (admin_tls) chain to, with which this
	// instance verifies them when it calls them (load pushes, bound
	// notices); re-read at every reload. Default: the system roots, plus
	// admin_tls.client_ca when set.
	PeerCA string `yaml:"peer_ca"`
}

// instanceName is what instance.name allows.
var instanceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckEtcdEndpoint returns what an etcd endpoint allows, or "" when ep is
// fine.
func CheckEtcdEndpoint(ep string) string {
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "must be an etcd client URL, http://host:port or https://host:port"
	}
	return ""
}

// validateCluster adds the problems of store and instance to p.
func (f File) validateCluster(p *problems) {
	e := f.Store.Etcd
	if e.Enabled() {
		if len(e.Endpoints) == 0 && !e.Embedded.Enabled() {
			p.fail("store.etcd.endpoints", "", "must list at least one etcd client URL when store.etcd is set")
		}
		for i, ep := range e.Endpoints {
			if msg := CheckEtcdEndpoint(ep); msg != "" {
				p.fail(fmt.Sprintf("store.etcd.endpoints[%d]", i), ep, msg)
			}
		}
		if e.Prefix != "" && (!strings.HasPrefix(e.Prefix, "/") || !strings.HasSuffix(e.Prefix, "/") || strings.ContainsFunc(e.Prefix, unicode.IsControl)) {
			p.fail("store.etcd.prefix", e.Prefix, "must start and end with /, such as /fulcrum/")
		}
		if d := e.DialTimeout.D(); d != 0 && (d < 100*time.Millisecond || d > time.Minute) {
			p.fail("store.etcd.dial_timeout", e.DialTimeout.String(), "must be a duration in [100ms, 1m]")
		}
		if d := e.SessionTTL.D(); d != 0 && (d < 2*time.Second || d > time.Minute || d%time.Second != 0) {
			p.fail("store.etcd.session_ttl", e.SessionTTL.String(), "must be whole seconds in [2s, 1m] (etcd leases count seconds)")
		}
		if d := e.CompactEvery.D(); d != 0 && (d < time.Second || d > 24*time.Hour) {
			p.fail("store.etcd.compact_every", e.CompactEvery.Value.String(), "must be 0 (off) or a duration in [1s, 24h]")
		}
		if (e.Username == "") != (e.Password == "") {
			p.fail("store.etcd.username", e.Username, "must be given with store.etcd.password (both or neither)")
		}
		if (e.TLS.Cert == "") != (e.TLS.Key == "") {
			p.fail("store.etcd.tls.cert", e.TLS.Cert, "must be given with store.etcd.tls.key (both or neither)")
		}
		for _, k := range []struct{ key, v string }{{"store.etcd.tls.ca", e.TLS.CA}, {"store.etcd.tls.cert", e.TLS.Cert}, {"store.etcd.tls.key", e.TLS.Key}} {
			if strings.ContainsFunc(k.v, unicode.IsControl) || len(k.v) > 4096 {
				p.fail(k.key, k.v, "must be a file path of at most 4096 characters, without control characters")
			}
		}
	}
	f.validateEmbedded(p)
	if n := f.Instance.Name; n != "" && !instanceName.MatchString(n) {
		p.fail("instance.name", n, "must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if ca := f.Instance.PeerCA; strings.ContainsFunc(ca, unicode.IsControl) || len(ca) > 4096 || (ca != "" && strings.TrimSpace(ca) == "") {
		p.fail("instance.peer_ca", ca, "must be a file path of at most 4096 characters, without control characters")
	}
	if u := f.Instance.AdminURL; u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			p.fail("instance.admin_url", u, "must be an http:// or https:// URL, such as https://fulcrum-a.example:7070")
		}
	}
}

// MarshalYAML writes the duration, or null when unset (so that the
// default applies again when read back).
func (o OptionalDuration) MarshalYAML() (any, error) {
	if !o.Set {
		return nil, nil
	}
	return o.Value.String(), nil
}
