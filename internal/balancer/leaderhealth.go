package balancer

import (
	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/health"
)

// Health in a cluster (leadership.go). Only a group's leader probes its
// replicas; each up/down change its probes decide is written to the store
// as health/<group>/<id> through its fence (groupstore.Health; fenced.go),
// and every other instance applies it from the watch (follow.go) or its
// load. A new leader starts a new prober, whose targets start up: a
// replica stored as down is set up again by its first successful probe,
// or stays down once the probes have failed `fall` times. Passive
// ejection stays each instance's own.

// healthWriteLocked queues the leader's write of replica id's health
// state, in a cluster. Caller holds g.mu and flushes after releasing it.
func (g *group) healthWriteLocked(id, state string) {
	if g.b.opts.Leadership == nil {
		return
	}
	g.queueWriteLocked(&storeWrite{putHealth: &groupstore.Health{Group: g.name, ID: id, State: state, Term: g.roleLocked().term}, fenced: true})
}

// applyStoredHealthLocked applies a health state the leader stored to a
// member, unless this instance leads the group (its own probes decide
// then); it tells whether the member's state changed. Caller holds g.mu.
func (g *group) applyStoredHealthLocked(id, state string) bool {
	m := g.members[id]
	if m == nil || g.leading {
		return false
	}
	ev := groupcore.HealthUp
	if state == health.Down {
		ev = groupcore.HealthDown
	}
	return g.applyLocked(m, ev)
}

// followHealth applies a stored health state (put) or its deletion (up).
func (b *Balancer) followHealth(h groupstore.Health, put bool) {
	b.mu.RLock()
	g := b.groups[h.Group]
	b.mu.RUnlock()
	if g == nil {
		return
	}
	if !put {
		h.State = health.Up
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.applyStoredHealthLocked(h.ID, h.State) {
		g.b.log.Info("replica health changed by the group's leader", "group", g.name, "replica", h.ID, "state", h.State)
		g.membershipChangedLocked()
		g.emitLocked("membership", g.membersEventLocked())
	}
}

// upAfterProbeLocked handles a successful probe of a leader whose prober
// still counts the replica up while the group's state says down (a state
// a former leader stored): the replica is up. It tells whether the
// member's state changed (a write is queued). Caller holds g.mu.
func (h *groupHealth) upAfterProbeLocked(id string) bool {
	g := h.g
	m := g.members[id]
	if m == nil || g.b.opts.Leadership == nil || !g.leading || h.probedDown[id] || g.stateLocked(m) != analyzer.StateDown {
		return false
	}
	if !g.applyLocked(m, groupcore.HealthUp) {
		return false
	}
	g.healthWriteLocked(id, health.Up)
	return true
}
