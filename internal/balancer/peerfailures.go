package balancer

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Failed calls to other instances (load pushes, loadpush.go; bound
// notices, boundnotice.go) are counted in
// fulcrum_cluster_push_failures_total{kind} and logged as a warning at
// most once per PushWarnInterval per peer (every failure at debug), so
// that a cluster whose instances cannot reach each other's admin API
// (a wrong instance.admin_url, an admin certificate the peers do not
// trust: instance.peer_ca) says so without flooding the log.

// PushWarnInterval is the least time between two warnings about failed
// calls to one peer.
const PushWarnInterval = time.Minute

// Kinds of calls to other instances, the kind label of
// fulcrum_cluster_push_failures_total.
const (
	pushKindLoads = "loads"
	pushKindBound = "bound"
	// pushKindAsk: a replicated group's reply request passed on to the
	// other instances (replicated.go).
	pushKindAsk = "reply_request"
)

// peerFailures counts and logs the failed calls to other instances. Safe
// for concurrent use.
type peerFailures struct {
	total *prometheus.CounterVec

	mu     sync.Mutex
	warned map[string]time.Time // by peer: the last warning
}

func newPeerFailures() *peerFailures {
	f := &peerFailures{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fulcrum_cluster_push_failures_total",
			Help: "Calls to other instances' admin API that failed, by kind: loads (load views the leader pushes), bound (clients bound by planned moves, told to the group's leader), reply_request (a replicated group's reply request passed on to the other instances).",
		}, []string{"kind"}),
		warned: map[string]time.Time{},
	}
	for _, k := range []string{pushKindLoads, pushKindBound, pushKindAsk} {
		f.total.WithLabelValues(k) // present at 0 from the start
	}
	return f
}

// warnDue counts a failure of kind to peer at now and tells whether it
// is to be logged as a warning: the first to peer, or the first after
// PushWarnInterval.
func (f *peerFailures) warnDue(kind, peer string, now time.Time) bool {
	f.total.WithLabelValues(kind).Inc()
	f.mu.Lock()
	defer f.mu.Unlock()
	if last, ok := f.warned[peer]; ok && now.Sub(last) < PushWarnInterval {
		return false
	}
	f.warned[peer] = now
	return true
}

// pushFailed records that a call of kind for group to peer failed with
// err.
func (b *Balancer) pushFailed(kind, group, peer string, err error) {
	if b.peerFails.warnDue(kind, peer, b.now()) {
		b.log.Warn("cannot reach another instance's admin API (warned at most once a minute per instance; see fulcrum_cluster_push_failures_total)",
			"kind", kind, "group", group, "peer", peer, "err", err)
		return
	}
	b.log.Debug("call to another instance failed", "kind", kind, "group", group, "peer", peer, "err", err)
}

// PeerMetrics exports fulcrum_cluster_push_failures_total.
func (b *Balancer) PeerMetrics() prometheus.Collector { return b.peerFails.total }
