package etcdstore

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
)

// Defaults of Options.
const (
	DefaultPrefix      = "/fulcrum/"
	DefaultDialTimeout = 5 * time.Second
	// DefaultProbeInterval is how often the store checks that etcd answers.
	DefaultProbeInterval = time.Second
)

// Options say where the store is.
type Options struct {
	// Endpoints are etcd's client URLs (http:// or https://); at least one.
	Endpoints []string
	// Prefix is where the store's keys live in etcd; default
	// DefaultPrefix. It must start and end with "/".
	Prefix string
	// DialTimeout bounds the first connection, and every request whose
	// context has no earlier deadline, so that an unreachable etcd is an
	// error, never a hang; default DefaultDialTimeout, at least 100ms.
	DialTimeout time.Duration
	// Username and Password authenticate to etcd; both or neither.
	Username, Password string
	// TLS is the client side of TLS to etcd (CA, and the client pair for
	// mTLS); nil: TLS only if an endpoint is https:// (system roots).
	TLS *certs.ClientFiles
	// ProbeInterval is how often the store checks that etcd answers
	// (health.go); default DefaultProbeInterval, at least 10ms.
	ProbeInterval time.Duration
	// Metrics, when not nil, records the store's requests (metrics.go).
	Metrics *Metrics
	// Logger logs etcd becoming unreachable and answering again; nil
	// logs nothing.
	Logger *slog.Logger
}

// withDefaults fills the defaults and checks o; errors name the field,
// the value and what is allowed.
func (o Options) withDefaults() (Options, error) {
	if len(o.Endpoints) == 0 {
		return o, errors.New("etcdstore: endpoints: none given, want at least one etcd client URL")
	}
	for _, ep := range o.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, fmt.Errorf("etcdstore: endpoint %q: want http://host:port or https://host:port", ep)
		}
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return o, fmt.Errorf("etcdstore: prefix %q: must start and end with /", o.Prefix)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.DialTimeout < 100*time.Millisecond {
		return o, fmt.Errorf("etcdstore: dial_timeout %v: must be at least 100ms", o.DialTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.ProbeInterval < 10*time.Millisecond {
		return o, fmt.Errorf("etcdstore: probe interval %v: must be at least 10ms", o.ProbeInterval)
	}
	if (o.Username == "") != (o.Password == "") {
		return o, errors.New("etcdstore: username and password must be given together")
	}
	return o, nil
}
