package etcdlog

import (
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// DefaultRecountEvery is Options.RecountEvery's default.
const DefaultRecountEvery = time.Second

// DefaultProgressEvery is Options.ProgressEvery's default.
const DefaultProgressEvery = 5 * time.Second

// minSessionTTL is the shortest lease etcd grants reliably.
const minSessionTTL = 2 * time.Second

// Options of a group's log.
type Options struct {
	// Client is the etcd client; the log does not close it. Calls are
	// bounded by their context only: callers give it a deadline, so that
	// an unreachable etcd is an error, never a hang.
	Client *clientv3.Client
	// Prefix is the deployment's prefix (starts and ends with "/").
	Prefix string
	// Group names the replicated group.
	Group  string
	Limits replog.Limits
	// SessionTTL is the life of a session's lease; default
	// replog.DefaultSessionTTL; whole seconds, at least 2 s.
	SessionTTL time.Duration
	// Clock stamps entries and paces lease renewals and recounts; nil:
	// the system clock.
	Clock clock.Clock
	// RecountEvery is how often the log's bytes are counted again from
	// etcd; default DefaultRecountEvery.
	RecountEvery time.Duration
	// ProgressEvery is how often a watch that follows etcd asks it for a
	// progress notification, which moves LowestNeeded on while the group
	// is quiet; default DefaultProgressEvery.
	ProgressEvery time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Client == nil {
		return o, errors.New("etcdlog: client: none given")
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return o, fmt.Errorf("etcdlog: prefix %q: must start and end with /", o.Prefix)
	}
	if o.Group == "" {
		return o, errors.New("etcdlog: group: empty name")
	}
	lim, err := o.Limits.WithDefaults()
	if err != nil {
		return o, err
	}
	o.Limits = lim
	if o.SessionTTL == 0 {
		o.SessionTTL = replog.DefaultSessionTTL
	}
	if err := replog.CheckTTL(o.SessionTTL, minSessionTTL); err != nil {
		return o, err
	}
	if o.SessionTTL%time.Second != 0 {
		return o, fmt.Errorf("replog: session_ttl %v: must be whole seconds (an etcd lease's TTL)", o.SessionTTL)
	}
	if o.RecountEvery == 0 {
		o.RecountEvery = DefaultRecountEvery
	}
	if o.RecountEvery < 0 {
		return o, fmt.Errorf("etcdlog: recount interval %v: must be positive", o.RecountEvery)
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	if o.ProgressEvery < 0 {
		return o, fmt.Errorf("etcdlog: progress interval %v: must be positive", o.ProgressEvery)
	}
	o.Clock = clock.Or(o.Clock)
	return o, nil
}
