package leader

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
)

// Defaults of Options.
const (
	DefaultPrefix     = "/fulcrum/"
	DefaultSessionTTL = 3 * time.Second
	// MinSessionTTL is the shortest session TTL: etcd's lease TTLs are
	// whole seconds, and one second leaves no room for a keep-alive.
	MinSessionTTL = 2 * time.Second
)

// Options of an Elector.
type Options struct {
	// Client is the etcd client (required). The Elector does not close it.
	Client *clientv3.Client
	// Prefix is the deployment's etcd prefix; default DefaultPrefix. It
	// must start and end with "/". The elections live under
	// <prefix>leaders/<group>/.
	Prefix string
	// Instance is this instance's name (required), the value of its
	// election keys: what Leaders reports.
	Instance string
	// SessionTTL is the TTL of the instance's lease: a leader that stops
	// keeping it alive loses leadership within it. Whole seconds, at
	// least MinSessionTTL; default DefaultSessionTTL.
	SessionTTL time.Duration
	// Clock reads the time for warm-up (Report, CanPlan); default the
	// system clock. The pauses between retries against etcd are real
	// time, as etcd's lease is.
	Clock clock.Clock
	// Metrics, when set, counts changes.
	Metrics *Metrics
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// OnChange, when set, is called with every change of a group's
	// state, in order, from one goroutine of the Elector's, never with
	// its lock held; it must not block for long.
	OnChange func(Change)
}

func (o Options) withDefaults() (Options, error) {
	if o.Client == nil {
		return o, errors.New("leader: client: none given, want an etcd client")
	}
	if o.Instance == "" {
		return o, errors.New("leader: instance: empty, want this instance's name")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return o, fmt.Errorf("leader: prefix %q: must start and end with /", o.Prefix)
	}
	if o.SessionTTL == 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.SessionTTL < MinSessionTTL || o.SessionTTL%time.Second != 0 {
		return o, fmt.Errorf("leader: session_ttl %v: must be whole seconds, at least %v", o.SessionTTL, MinSessionTTL)
	}
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// checkGroup refuses a group name that cannot be an election prefix.
func checkGroup(name string) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("leader: group %q: want a non-empty name without /", name)
	}
	return nil
}
