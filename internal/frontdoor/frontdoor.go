// Package frontdoor holds what every protocol's front door shares: the
// immutable snapshot of a group that picks are made on, the members it
// picks from with their counters, and the Group interface through which a
// front door talks back to the balancer, and the one attempt policy every
// proxying front door follows (Decide, attempt.go: after each attempt of a
// call, whether it goes again, whether the replica failed, what the client
// gets). The protocol front doors live in sub-packages (httpdoor, giopdoor)
// and are shaped like net/http: a listener, a handler, sentinel errors
// mapped to protocol statuses.
package frontdoor

import (
	"context"
	"errors"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Counters are a member's cumulative counters, updated atomically.
type Counters struct {
	// Bindings counts clients bound to the member by the front door.
	Bindings atomic.Uint64
	// Rebinds counts bindings that moved a client here from elsewhere.
	Rebinds atomic.Uint64
	// Proxied counts calls the front door forwarded (per-request).
	Proxied atomic.Uint64
	// Redirected counts front door redirects to the member.
	Redirected atomic.Uint64
	// Failures counts failed calls (connection errors, 5xx) seen by the
	// front door or its probes.
	Failures atomic.Uint64
}

// Member is one replica as a front door sees it. Immutable but for the
// atomic counters it points to.
type Member struct {
	// Replica is the strategy's view (id, weight, load, live counters).
	Replica *strategy.Replica
	// Address is the registered address (base URL for HTTP).
	Address string
	// URL is Address parsed (HTTP groups).
	URL *url.URL
	// IOR is Address parsed (GIOP groups): the reference clients are
	// forwarded to, its type id kept (or the group's, for a replica
	// registered by corbaloc URL).
	IOR *ior.IOR
	// State is the replica's state in this snapshot.
	State string
	// Counters are shared by all snapshots of the member.
	Counters *Counters
	// Queue is the group's queue when it has one (nil: none), kicked when
	// the member frees a slot.
	Queue *Queue
	// Pace frees the member's slots ahead of its calls' ends when the
	// queue has a lead (nil: never); shared by all snapshots.
	Pace *Pace
	// Window counts the calls sent to the member and their latencies over
	// the last StatsWindow (nil: not counted); shared by all snapshots.
	Window *CallWindow
}

// ID returns the member's replica id.
func (m *Member) ID() string { return m.Replica.ID }

// Snapshot is an immutable view of one group, swapped atomically whenever
// membership, states, loads or the strategy change.
type Snapshot struct {
	Group   string
	Binding string
	// Advertise is the group's public front door URL.
	Advertise string
	// Picker picks among Eligible.
	Picker strategy.Picker
	// Key says which request key the picker wants (KeyNone usually).
	Key strategy.KeySpec
	// Eligible are the members that may take new bindings, indexed like
	// the picker's replicas (Eligible[r.Index].Replica == r).
	Eligible []*Member
	// Members are all members by id, including draining, down and ejected.
	Members map[string]*Member
	// Planned maps a client id to the member the analyzer planned to move
	// it to.
	Planned map[string]*Member
	// LookupMove, when not nil, finds the planned move of a client
	// coming back to be bound again that Planned does not name (cluster
	// mode: a move another instance's leader committed to etcd; nil on a
	// single node). It returns the replica id, ok false when there is no
	// move or the lookup failed, and must return by ctx's deadline
	// (PickRebind gives it MoveLookupTimeout). Safe for concurrent use.
	LookupMove func(ctx context.Context, client string) (replicaID string, ok bool)
	// MoveBound, when not nil, is told that the front door bound client
	// to replicaID by a move LookupMove found, before Group.Bound is told
	// of the binding, so that the balancer completes the move as it does
	// one of Planned's. Safe for concurrent use.
	MoveBound func(client, replicaID string)
	// MaxInflight caps per-member calls in flight in per-request mode
	// (0: no cap).
	MaxInflight int
	// Queue, when not nil, holds calls while every member is at
	// MaxInflight (AcquireWait).
	Queue *Queue
	// Timeouts bound the front door's connections.
	Timeouts protocol.Timeouts
	// Retry is the group's retry setting (RetryUnsent, RetryIdempotent;
	// "" means DefaultRetry), applied by Decide.
	Retry string
	// GIOP are the GIOP front door's settings (GIOP groups).
	GIOP protocol.GIOP
	// Replicated are the group's replication settings (binding
	// replicated): the bridge reads max_payload and read_only from them
	// per request.
	Replicated protocol.Replicated
	// Observer, when not nil, learns from finished proxied calls.
	Observer strategy.Observer
	// TCP are the tcp front door's settings (tcp groups).
	TCP protocol.TCP
	// Conns is the group's connection table (tcp groups; shared by all
	// the group's snapshots).
	Conns *conntable.Table
	// Affinity is the group's session table (nil: no affinity rules).
	Affinity Affinity
}

// ErrNoReplica is returned when nothing in the group can serve.
var ErrNoReplica = strategy.ErrNoReplica

// ErrOverloaded is returned when every candidate is at MaxInflight.
var ErrOverloaded = errors.New("frontdoor: every replica is at its in-flight limit")

// Pick chooses the member for a new binding or a proxied call: a client
// with a planned move goes to its planned member if that member is still
// eligible; everyone else gets the picker's choice. Pick does not allocate.
func (s *Snapshot) Pick(r *strategy.Request) (*Member, error) {
	if r.Client != "" && len(s.Planned) > 0 {
		if m, ok := s.Planned[r.Client]; ok && m.State == protocol.StateActive {
			return m, nil
		}
	}
	rep, err := s.Picker.Pick(r)
	if err != nil {
		return nil, err
	}
	return s.Eligible[rep.Index], nil
}

// Timeouts are a snapshot's protocol.Timeouts with the defaults applied.
type Timeouts struct {
	Connect, Request, Idle time.Duration
}

// TimeoutsOf returns t with registry's defaults in place of unset (or
// negative) durations.
func TimeoutsOf(t protocol.Timeouts) Timeouts {
	to := Timeouts{Connect: t.Connect.D(), Request: t.Request.D(), Idle: t.Idle.D()}
	if to.Connect <= 0 {
		to.Connect = registry.DefaultConnectTimeout
	}
	if to.Request <= 0 {
		to.Request = registry.DefaultRequestTimeout
	}
	if to.Idle <= 0 {
		to.Idle = registry.DefaultIdleTimeout
	}
	return to
}

// MaxPickTries bounds the picks Acquire makes for one call, when the picked
// members are at their in-flight limit or excluded, before it scans the
// eligible members.
const MaxPickTries = 8

// Acquire picks a member for a proxied call and counts the call in its
// Live.Inflight, skipping the members in exclude (by pointer or replica id,
// so a member of an earlier snapshot counts) and members already at
// MaxInflight. After MaxPickTries picks it scans the eligible members for
// one with room, starting at spill modulo their number: callers rotate
// spill, so that calls the strategy's choice has no room for spread over
// the others rather than all landing on the first. Errors: the picker's
// (ErrNoReplica), or ErrOverloaded when members were skipped for being
// full. End the call with Release.
func (s *Snapshot) Acquire(req *strategy.Request, exclude []*Member, spill uint32) (*Member, error) {
	tries := min(max(len(s.Eligible), 1), MaxPickTries)
	full := false
	for range tries {
		m, err := s.Pick(req)
		if err != nil {
			return nil, err
		}
		if excluded(m, exclude) {
			continue
		}
		if tryAcquire(m, s.MaxInflight) {
			return m, nil
		}
		full = true
	}
	n := len(s.Eligible)
	off := int(spill % uint32(max(n, 1)))
	for i := range n {
		m := s.Eligible[(off+i)%n]
		if m.State != protocol.StateActive || excluded(m, exclude) {
			continue
		}
		if tryAcquire(m, s.MaxInflight) {
			return m, nil
		}
		full = true
	}
	if full {
		return nil, ErrOverloaded
	}
	return nil, ErrNoReplica
}

// Release uncounts a call that Acquire counted on m, and hands the freed
// slot to a call waiting in the group's queue if there is one.
func (m *Member) Release() {
	m.Replica.Live.Inflight.Add(-1)
	if m.Queue != nil {
		m.Queue.Kick()
	}
}

// tryAcquire counts a call on m unless that would exceed limit (0: none)
// with the calls whose slots were freed ahead (Pace) left out.
func tryAcquire(m *Member, limit int) bool {
	n := m.Replica.Live.Inflight.Add(1)
	if limit > 0 && n-m.Early() > int64(limit) {
		m.Replica.Live.Inflight.Add(-1)
		return false
	}
	return true
}

func excluded(m *Member, exclude []*Member) bool {
	for _, x := range exclude {
		if x == m || x.ID() == m.ID() {
			return true
		}
	}
	return false
}

// Group is the balancer's side of one group, as a front door sees it.
// Implementations are safe for concurrent use.
type Group interface {
	// Snapshot returns the current snapshot; never nil.
	Snapshot() *Snapshot
	// Bound tells the balancer the front door bound client (may be "") to
	// m; moved is true when the client came back from another replica.
	Bound(m *Member, client string, moved bool)
	// Observe reports a finished call to m (proxied calls, probes):
	// latency, and whether it failed (connection error or 5xx).
	Observe(m *Member, latency time.Duration, failed bool)
}
