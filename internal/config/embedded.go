package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults of store.etcd.embedded.
const (
	// DefaultEtcdClientURL is where the embedded member serves etcd's
	// clients, fulcrum's own store among them.
	DefaultEtcdClientURL = "http://127.0.0.1:2379"
	// DefaultEtcdStartTimeout bounds the wait for the member to be ready
	// (a quorum of the peers up) at start.
	DefaultEtcdStartTimeout = protocol.Duration(time.Minute)
	// EtcdDataSubdir is the member's directory under data_dir by default.
	EtcdDataSubdir = "etcd"
)

// EtcdEmbedded is store.etcd.embedded: an etcd member run inside
// fulcrum serve, so that a few fulcrum instances form their etcd cluster
// themselves. The member's name is instance.name. The store then talks to
// store.etcd.endpoints when they are set, else to client_url.
type EtcdEmbedded struct {
	// Peers is the initial cluster: name=peerURL of every member, this
	// instance's name among them; required. Names are unique and are
	// instance names; peer URLs are http://host:port, this instance's
	// with an IP address (or localhost) as host, as the member listens
	// on it. Used only when DataDir holds no member yet.
	Peers []string `yaml:"peers"`
	// DataDir holds the member's data (write-ahead log and snapshots);
	// default <data_dir>/etcd.
	DataDir string `yaml:"data_dir"`
	// ClientURL is where the member serves clients (listened on and
	// advertised to the other members); default http://127.0.0.1:2379,
	// http://IP:port (or localhost), not a wildcard address.
	ClientURL string `yaml:"client_url"`
	// Join starts a member added to a running cluster (etcdctl member
	// add) rather than a new cluster; default false. Once DataDir holds a
	// member it makes no difference.
	Join bool `yaml:"join"`
	// StartTimeout bounds the wait at start for the member to be ready
	// (in a cluster with a quorum); default 1m, range [1s, 1h].
	StartTimeout protocol.Duration `yaml:"start_timeout"`
}

// Enabled reports whether store.etcd.embedded is set.
func (e EtcdEmbedded) Enabled() bool {
	return len(e.Peers) > 0 || e.DataDir != "" || e.ClientURL != "" || e.Join || e.StartTimeout != 0
}

// WithDefaults fills the unset keys of e with their defaults; dataDir is
// the config file's data_dir.
func (e EtcdEmbedded) WithDefaults(dataDir string) EtcdEmbedded {
	if e.DataDir == "" {
		e.DataDir = filepath.Join(dataDir, EtcdDataSubdir)
	}
	if e.ClientURL == "" {
		e.ClientURL = DefaultEtcdClientURL
	}
	if e.StartTimeout == 0 {
		e.StartTimeout = DefaultEtcdStartTimeout
	}
	return e
}

// EtcdPeer is one member of an embedded member's initial cluster.
type EtcdPeer struct {
	Name string
	URL  string
}

// String is the peer as --etcd-peers and etcd's --initial-cluster write
// it: name=URL.
func (p EtcdPeer) String() string { return p.Name + "=" + p.URL }

// allowedPeer is what one item of the peers allows.
const allowedPeer = "must be name=http://host:port, the name an instance.name (1-63 letters, digits, '.', '_' or '-', starting with a letter or digit)"

// ParseEtcdPeer parses one name=peerURL. It returns what is allowed, and
// a zero peer, when p is not one.
func ParseEtcdPeer(p string) (EtcdPeer, string) {
	name, raw, ok := strings.Cut(p, "=")
	if !ok || !instanceName.MatchString(name) {
		return EtcdPeer{}, allowedPeer
	}
	if msg := checkMemberURL(raw); msg != "" {
		return EtcdPeer{}, "the URL of " + name + " " + msg
	}
	return EtcdPeer{Name: name, URL: raw}, ""
}

// checkMemberURL returns what a member's peer or client URL allows, or ""
// when raw is fine: http://host:port, nothing else. The embedded member
// has no TLS of its own (an external etcd does).
func checkMemberURL(raw string) string {
	const allowed = "must be http://host:port (the embedded member serves plain HTTP; for TLS run an external etcd)"
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return allowed
	}
	if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" || u.Hostname() == "" {
		return allowed
	}
	return ""
}

// CheckEtcdListenURL returns what a URL the member listens on allows, or
// "" when raw is fine: an http URL whose host is an IP address, not a
// wildcard, or localhost (etcd binds only to those).
func CheckEtcdListenURL(raw string) string {
	if msg := checkMemberURL(raw); msg != "" {
		return msg
	}
	u, _ := url.Parse(raw)
	host := u.Hostname()
	if host == "localhost" {
		return ""
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() {
		return "must have an IP address (not a wildcard) or localhost as host: the member listens on it"
	}
	return ""
}

// CheckEtcdPeers checks the peers of an embedded member named self (its
// instance.name; "" skips the check that it is among them) and returns
// them parsed. field names the setting in the problems; an item's problem
// names field[i] when indexed is true, else field with the item as value.
// Every problem is a *protocol.FieldError.
func CheckEtcdPeers(field string, indexed bool, peers []string, self string) ([]EtcdPeer, []error) {
	var errs []error
	itemField := func(i int) string {
		if indexed {
			return fmt.Sprintf("%s[%d]", field, i)
		}
		return field
	}
	if len(peers) == 0 {
		return nil, []error{&protocol.FieldError{Field: field, Value: nil, Allowed: "must list every member as name=http://host:port, this instance's name among them"}}
	}
	var out []EtcdPeer
	names, urls := map[string]string{}, map[string]string{}
	for i, item := range peers {
		p, msg := ParseEtcdPeer(item)
		if msg != "" {
			errs = append(errs, &protocol.FieldError{Field: itemField(i), Value: item, Allowed: msg})
			continue
		}
		if prev, dup := names[p.Name]; dup {
			errs = append(errs, &protocol.FieldError{Field: itemField(i), Value: item, Allowed: fmt.Sprintf("must name each member once (%s is listed as %s already)", p.Name, prev)})
			continue
		}
		if prev, dup := urls[p.URL]; dup {
			errs = append(errs, &protocol.FieldError{Field: itemField(i), Value: item, Allowed: fmt.Sprintf("must give each member a peer URL of its own (%s is %s's already)", p.URL, prev)})
			continue
		}
		names[p.Name], urls[p.URL] = item, p.Name
		if p.Name == self {
			if msg := CheckEtcdListenURL(p.URL); msg != "" {
				errs = append(errs, &protocol.FieldError{Field: itemField(i), Value: item, Allowed: "this instance's peer URL " + msg})
				continue
			}
		}
		out = append(out, p)
	}
	if self != "" && len(errs) == 0 {
		if _, ok := names[self]; !ok {
			errs = append(errs, &protocol.FieldError{Field: field, Value: strings.Join(peers, ","), Allowed: fmt.Sprintf("must include this instance's name %q (instance.name) as %s=http://host:port", self, self)})
		}
	}
	return out, errs
}

// validateEmbedded adds the problems of store.etcd.embedded to p.
func (f File) validateEmbedded(p *problems) {
	e := f.Store.Etcd.Embedded
	if !e.Enabled() {
		return
	}
	const key = "store.etcd.embedded"
	// No peers is not a problem of the file: --etcd-peers may give them
	// (serve refuses to start with none).
	var peers []EtcdPeer
	var errs []error
	if len(e.Peers) > 0 {
		peers, errs = CheckEtcdPeers(key+".peers", true, e.Peers, f.Instance.Name)
		*p = append(*p, errs...)
	}
	if e.DataDir != "" && (strings.TrimSpace(e.DataDir) == "" || strings.ContainsFunc(e.DataDir, unicode.IsControl) || len(e.DataDir) > 4096) {
		p.fail(key+".data_dir", e.DataDir, "must be a directory path of at most 4096 characters, without control characters")
	}
	if e.ClientURL != "" {
		if msg := CheckEtcdListenURL(e.ClientURL); msg != "" {
			p.fail(key+".client_url", e.ClientURL, msg)
		}
	}
	if len(errs) == 0 && len(peers) > 0 {
		if msg := CheckEtcdClientURL(e.WithDefaults(f.DataDir).ClientURL, peers, f.Instance.Name); msg != "" {
			p.fail(key+".client_url", e.WithDefaults(f.DataDir).ClientURL, msg)
		}
	}
	if d := e.StartTimeout.D(); d != 0 && (d < time.Second || d > time.Hour) {
		p.fail(key+".start_timeout", e.StartTimeout.String(), "must be a duration in [1s, 1h]")
	}
}

// CheckEtcdClientURL returns what the client URL of the member named self
// allows beside its peers, or "" when client is fine: it must not be
// self's peer URL (both are listened on).
func CheckEtcdClientURL(client string, peers []EtcdPeer, self string) string {
	cu, err := url.Parse(client)
	if err != nil {
		return ""
	}
	for _, p := range peers {
		if pu, err := url.Parse(p.URL); err == nil && p.Name == self && pu.Host == cu.Host {
			return fmt.Sprintf("must differ from this instance's peer URL %s (the member listens on both)", p.URL)
		}
	}
	return ""
}
