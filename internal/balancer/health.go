package balancer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/health"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// groupHealth connects a group to the health state machines: active probes
// (a Prober per group, when health.path is set) and passive ejection (a
// Passive fed by the front door's finished calls). Methods ending in
// Locked expect g.mu held; observe must be called without it.
type groupHealth struct {
	g *group

	// mu guards passive, which the front door feeds on its hot path
	// without the group lock. Lock order: g.mu before mu.
	mu      sync.Mutex
	passive *health.Passive
	known   []string // ids given to passive

	// suspect marks, per replica id, a failure not yet followed by a
	// success. A success of a replica that is not suspect changes nothing
	// in passive, so observe skips the lock for it: the per-request hot
	// path takes no group-wide lock while calls succeed. The map is
	// rebuilt on membership changes and swapped atomically.
	suspect atomic.Pointer[map[string]*atomic.Bool]

	prober *health.Prober
	// proberKind is how the prober was made to probe (probeKind): GIOP
	// groups' servants with a LocateRequest (giopProbe), others with HTTP
	// GETs.
	proberKind string
	stopProb   context.CancelFunc
	probDone   chan struct{}
	running    bool
	// probedDown are the replicas the prober last said down (guarded by
	// g.mu; leaderhealth.go).
	probedDown map[string]bool
	// tcpCheck are a tcp group's health.send and health.expect, read by
	// its probes (tcpProbe).
	tcpCheck atomic.Pointer[[2]string]
}

func newGroupHealth(g *group) *groupHealth {
	h := &groupHealth{g: g, passive: health.NewPassive(g.spec.Health.Passive)}
	h.newProberLocked()
	return h
}

// Kinds of active probe (probeKind).
const (
	probeLocate = "locate" // a GIOP LocateRequest to the replica's IOR
	probeHTTP   = "http"   // an HTTP GET of the health path
	probeTCP    = "tcp"    // a TCP connect, or health.send and health.expect
)

// probeKind is how gs's replicas are probed: a GIOP group's servants with
// a LocateRequest; everything else, a replicated group's agents included
// (whatever the protocol: they are addressed by URL), with HTTP GETs.
func probeKind(gs protocol.Group) string {
	switch registry.AddressProtocol(gs) {
	case protocol.ProtocolGIOP:
		return probeLocate
	case protocol.ProtocolTCP:
		return probeTCP
	}
	return probeHTTP
}

// healthConfig is the health settings gs's prober runs with: gs.Health,
// with a replicated group's path defaulting to the agents' own
// protocol.ReplicationHealthzPath (200 while the agent applies the log,
// 503 while it joins or after it stopped).
func healthConfig(gs protocol.Group) protocol.Health {
	cfg := gs.Health
	if registry.IsReplicated(gs) && cfg.Path == "" {
		cfg.Path = protocol.ReplicationHealthzPath
	}
	return cfg
}

// newProberLocked makes the prober for the group's protocol.
func (h *groupHealth) newProberLocked() {
	g := h.g
	opts := health.ProberOptions{OnResult: h.onProbeResult, Clock: g.b.clock, Dial: g.b.opts.Dial}
	kind := probeKind(g.spec)
	switch kind {
	case probeLocate:
		opts.Probe = giopProbe(g.b.opts.Dial)
	case probeTCP:
		h.setTCPCheckLocked()
		opts.Probe = tcpProbe(g.b.opts.Dial, h.tcpCheckNow)
	default:
		opts.DialTLS = g.dialReplicaTLS("http/1.1")
	}
	h.prober = health.NewProber(healthConfig(g.spec), h.onProbe, opts)
	h.proberKind = kind
	h.probedDown = map[string]bool{}
}

// probing tells whether the group's replicas are probed actively: GIOP,
// tcp and replicated groups always are, others when they set a health
// path.
func (h *groupHealth) probingLocked() bool {
	kind := probeKind(h.g.spec)
	return healthConfig(h.g.spec).Path != "" || kind == probeLocate || kind == probeTCP
}

// setTCPCheckLocked publishes the group's health.send and health.expect to
// its tcp probes. Caller holds g.mu.
func (h *groupHealth) setTCPCheckLocked() {
	h.tcpCheck.Store(&[2]string{h.g.spec.Health.Send, h.g.spec.Health.Expect})
}

// tcpCheckNow is the tcp probes' current send and expect.
func (h *groupHealth) tcpCheckNow() (send, expect string) {
	if c := h.tcpCheck.Load(); c != nil {
		return c[0], c[1]
	}
	return "", ""
}

// startLocked starts active probing if the group has a health path.
func (h *groupHealth) startLocked() {
	h.running = true
	h.syncLocked()
	h.startProberLocked()
}

func (h *groupHealth) startProberLocked() {
	if h.stopProb != nil || !h.probingLocked() || !h.running || !h.g.leading {
		return
	}
	ctx, cancel := context.WithCancel(h.g.b.ctx)
	done := make(chan struct{})
	h.stopProb, h.probDone = cancel, done
	p := h.prober
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
}

// stopLocked stops probing. The prober's last round may still report a
// change; onProbe then finds the group stopped and ignores it.
func (h *groupHealth) stopLocked() {
	h.running = false
	if h.stopProb != nil {
		h.stopProb()
		h.stopProb, h.probDone = nil, nil
	}
}

// leadershipLocked starts the active probes when the instance has come to
// lead the group, and stops them when it no longer does (leadership.go):
// only the leader probes. Passive ejection is every instance's.
func (h *groupHealth) leadershipLocked() {
	if h.g.leading {
		if h.stopProb == nil {
			// A new prober: its targets start up (leaderhealth.go).
			h.newProberLocked()
			h.syncLocked()
		}
		h.startProberLocked()
		return
	}
	if h.stopProb != nil {
		h.stopProb()
		h.stopProb, h.probDone = nil, nil
	}
}

// configureLocked applies changed health settings.
func (h *groupHealth) configureLocked() {
	h.mu.Lock()
	h.passive.SetConfig(h.g.spec.Health.Passive)
	h.mu.Unlock()
	if h.proberKind != probeKind(h.g.spec) {
		if h.stopProb != nil {
			h.stopProb()
			h.stopProb, h.probDone = nil, nil
		}
		h.g.core.ApplyAll(groupcore.HealthUp, h.g.b.now())
		h.newProberLocked()
		h.syncLocked()
	}
	h.setTCPCheckLocked()
	h.prober.SetConfig(healthConfig(h.g.spec))
	if !h.probingLocked() && (h.stopProb != nil || !h.g.leading) {
		// Probing stopped: on an instance that does not lead the group
		// (leaderhealth.go) the states the leader stored go too.
		if h.stopProb != nil {
			h.stopProb()
			h.stopProb, h.probDone = nil, nil
		}
		h.g.core.ApplyAll(groupcore.HealthUp, h.g.b.now())
	}
	h.startProberLocked()
}

// syncLocked gives the prober and the passive detector the current
// members.
func (h *groupHealth) syncLocked() {
	targets := make([]health.Target, 0, len(h.g.order))
	h.mu.Lock()
	seen := map[string]bool{}
	old := map[string]*atomic.Bool{}
	if p := h.suspect.Load(); p != nil {
		old = *p
	}
	flags := make(map[string]*atomic.Bool, len(h.g.order))
	for _, m := range h.g.order {
		targets = append(targets, health.Target{ID: m.rec.ID, URL: m.rec.Address})
		h.passive.Add(m.rec.ID)
		seen[m.rec.ID] = true
		if f := old[m.rec.ID]; f != nil {
			flags[m.rec.ID] = f
		} else {
			flags[m.rec.ID] = new(atomic.Bool)
		}
	}
	h.suspect.Store(&flags)
	for _, id := range h.known {
		if !seen[id] {
			h.passive.Remove(id)
		}
	}
	h.known = h.known[:0]
	for id := range seen {
		h.known = append(h.known, id)
	}
	h.mu.Unlock()
	h.prober.SetTargets(targets)
}

// onProbe applies an active probe's state change.
func (h *groupHealth) onProbe(id, state string) {
	g := h.g
	g.mu.Lock()
	m := g.members[id]
	if m == nil || !h.running || !g.leading {
		g.mu.Unlock()
		return
	}
	if state == health.Down {
		h.probedDown[id] = true
	} else {
		delete(h.probedDown, id)
	}
	ev := groupcore.HealthUp
	if state == health.Down {
		ev = groupcore.HealthDown
	}
	if !g.applyLocked(m, ev) {
		g.mu.Unlock()
		return
	}
	g.b.log.Warn("replica health changed", "group", g.name, "replica", id, "state", state)
	g.healthWriteLocked(id, state) // leaderhealth.go: in a cluster
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	g.mu.Unlock()
	g.flushWrites()
}

// onProbeResult counts a failed probe in the replica's failures.
// A success may set up a replica a former leader stored as down
// (leaderhealth.go).
func (h *groupHealth) onProbeResult(id string, _ time.Duration, ok bool) {
	g := h.g
	if ok {
		if g.b.opts.Leadership == nil {
			return
		}
		g.mu.Lock()
		changed := h.running && h.upAfterProbeLocked(id)
		if changed {
			g.b.log.Warn("replica health changed", "group", g.name, "replica", id, "state", health.Up)
			g.membershipChangedLocked()
			g.emitLocked("membership", g.membersEventLocked())
		}
		g.mu.Unlock()
		if changed {
			g.flushWrites()
		}
		return
	}
	g.mu.Lock()
	m := g.members[id]
	g.mu.Unlock()
	if m != nil {
		m.counters.Failures.Add(1)
	}
}

// observe feeds one finished call to passive ejection.
func (h *groupHealth) observe(id string, failed bool) {
	var flag *atomic.Bool
	if p := h.suspect.Load(); p != nil {
		flag = (*p)[id]
	}
	if flag == nil || (!failed && !flag.Load()) {
		return
	}
	h.mu.Lock()
	flag.Store(failed)
	ch, changed := h.passive.Observe(id, failed, h.g.b.now())
	h.mu.Unlock()
	if !changed {
		return
	}
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.members[ch.ID]; m != nil && g.applyLocked(m, groupcore.Ejected) {
		m.ejections.Add(1)
		g.b.log.Warn("replica ejected after failed calls", "group", g.name, "replica", ch.ID)
		g.membershipChangedLocked()
		g.emitLocked("membership", g.membersEventLocked())
	}
}

// tickLocked brings back replicas whose ejection has ended.
func (h *groupHealth) tickLocked() bool {
	h.mu.Lock()
	changes := h.passive.Tick(h.g.b.now())
	h.mu.Unlock()
	changed := false
	for _, ch := range changes {
		if m := h.g.members[ch.ID]; m != nil && h.g.applyLocked(m, groupcore.Readmitted) {
			h.g.b.log.Info("ejected replica returns", "group", h.g.name, "replica", ch.ID)
			changed = true
		}
	}
	return changed
}
