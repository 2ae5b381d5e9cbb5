package balancer

import (
	"context"
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A replicated group (binding replicated; docs/replication.md) has one
// replhub.Hub on each instance while its front door runs: started with the
// group (before its front door, which orders through it), stopped after
// its front door has shut down, and replaced, with its log reopened, when
// the binding changes to or from replicated or the replicated block
// changes.

// ErrNoReplicatedLog is returned when a replicated group is started by a
// balancer without Options.ReplicatedLog.
var ErrNoReplicatedLog = errors.New("balancer: binding replicated needs a replicated log, and none is configured")

// hubRun is a running hub and what stops it.
type hubRun struct {
	hub      *replhub.Hub
	outcalls *replhub.Outcalls // outcalls.go
	log      replog.Log
	stop     context.CancelFunc
	done     chan struct{}
}

// close ends the hub's Run and closes its log.
func (r *hubRun) close() {
	if r == nil {
		return
	}
	r.stop()
	<-r.done
	_ = r.log.Close()
}

// Errors of ReplicatedHub.
var (
	// ErrNotReplicated: the group's binding is not replicated (409).
	ErrNotReplicated = errors.New("balancer: the group is not replicated")
	// ErrHubNotRunning: the replicated group's log is not open here (its
	// front door does not run, or the log failed to open) (503).
	ErrHubNotRunning = errors.New("balancer: the replicated group's log is not open on this instance")
)

// ReplicatedHub returns the hub of replicated group name and its
// replicated settings. Errors: ErrUnknownGroup, ErrNotReplicated (another
// binding), ErrHubNotRunning (its front door does not run here).
func (b *Balancer) ReplicatedHub(name string) (*replhub.Hub, protocol.Replicated, error) {
	g, err := b.group(name)
	if err != nil {
		return nil, protocol.Replicated{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !registry.IsReplicated(g.spec) {
		return nil, protocol.Replicated{}, fmt.Errorf("%w: group %s has binding %s", ErrNotReplicated, name, g.spec.Binding)
	}
	if g.hub == nil {
		return nil, g.spec.Replicated, fmt.Errorf("%w: group %s", ErrHubNotRunning, name)
	}
	return g.hub.hub, g.spec.Replicated, nil
}

// Hub returns the hub of replicated group name while its front door runs;
// false for an unknown group, a group that is not replicated, or one that
// is not running.
func (b *Balancer) Hub(name string) (*replhub.Hub, bool) {
	h, _, err := b.ReplicatedHub(name)
	return h, err == nil
}

// hubLocked is the group's hub (nil: none), for its front door (the
// bridge of a replicated group, built in newFrontDoorLocked). Caller holds
// g.mu.
func (g *group) hubLocked() *replhub.Hub {
	if g.hub == nil {
		return nil
	}
	return g.hub.hub
}

// ReplicaOf returns the id of the replica of group name whose token is
// token; false when the token is no replica's of that group. It is the
// access check of the log routes, which accept only the token of a
// replica of the group.
func (b *Balancer) ReplicaOf(name, token string) (string, bool) {
	if token == "" {
		return "", false
	}
	b.mu.RLock()
	m := b.tokens[registry.HashToken(token)]
	b.mu.RUnlock()
	if m == nil {
		m = b.storedToken(token) // registered at another instance a moment ago (leaderreport.go)
	}
	if m == nil || m.g.name != name {
		return "", false
	}
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	if m.g.members[m.rec.ID] != m {
		return "", false
	}
	return m.rec.ID, true
}

// startHubLocked opens the log of a replicated group and starts its hub;
// it does nothing for other groups. Caller holds g.mu.
func (g *group) startHubLocked() error {
	if !registry.IsReplicated(g.spec) || g.hub != nil {
		return nil
	}
	open := g.b.opts.ReplicatedLog
	if open == nil {
		return fmt.Errorf("group %s: %w", g.name, ErrNoReplicatedLog)
	}
	r := g.spec.Replicated
	lim := replog.Limits{MaxPayload: int(r.MaxPayload), MaxLogBytes: r.MaxLogBytes.Int64()}
	l, err := open(g.name, lim, r.SessionTTL.D())
	if err != nil {
		return fmt.Errorf("balancer: group %s: open the replicated log: %w", g.name, err)
	}
	l = &meteredLog{Log: l, m: g.b.replMetrics, group: g.name, now: g.b.now}
	self := g.b.opts.Instance
	h := replhub.New(replhub.Options{
		Group:    g.name,
		Instance: self,
		Log:      l,
		Live:     g.livePeers,
		ReplyTo: func(instance string) string {
			if instance == "" || instance == self || g.b.opts.PeerURL == nil {
				return ""
			}
			u, _ := g.b.opts.PeerURL(instance)
			return u
		},
		AskPeers:     g.askPeers(),
		OnDivergence: g.diverged,
		Clock:        g.b.clock,
		Logger:       g.b.log.With("group", g.name),
	})
	ctx, cancel := context.WithCancel(context.Background())
	run := &hubRun{hub: h, outcalls: replhub.NewOutcalls(g.forwardOutcall, g.b.now), log: l, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(run.done)
		h.Run(ctx)
	}()
	g.hub = run
	g.b.log.Info("replicated log opened", "group", g.name, "max_payload", r.MaxPayload.String(), "max_log_bytes", r.MaxLogBytes.String(), "session_ttl", r.SessionTTL.String())
	return nil
}

// takeHubLocked detaches the group's hub, for the caller to close after
// releasing g.mu (nil when there is none). Caller holds g.mu.
func (g *group) takeHubLocked() *hubRun {
	r := g.hub
	g.hub = nil
	return r
}

// livePeers are the group's live replicas (active: not draining, ejected
// or down), read from the published snapshot without the group's lock.
func (g *group) livePeers() []replhub.Peer {
	snap := g.snap.Load()
	if snap == nil {
		return nil
	}
	peers := make([]replhub.Peer, 0, len(snap.Eligible))
	for _, m := range snap.Eligible {
		peers = append(peers, replhub.Peer{ID: m.ID(), Address: m.Address})
	}
	return peers
}
