package balancer

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/affinity"
	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// group is one group at run time. Its lock (mu) guards everything but the
// published snapshot, which front doors read without it.
type group struct {
	b *Balancer
	// name never changes; fromConfig mirrors spec.Source == config. Both
	// are read without the lock.
	name       string
	fromConfig atomic.Bool

	mu    sync.Mutex
	spec  protocol.Group
	strat strategy.Strategy
	// core makes the group's decisions (package groupcore): replica
	// states, advisories, steps, the per-balance reset, removals.
	core     *groupcore.Core
	members  map[string]*member
	order    []*member // registration order
	lastStep groupcore.Step
	subs     map[chan Event]struct{}
	health   *groupHealth
	// blocks are the addresses the group refuses to register, by their
	// registry.NormalizeAddress form (blocks.go).
	blocks map[string]groupstore.Block

	// pending are the store writes not yet written, in order; deleted is
	// set once the group's deletion is queued (writes.go). Guarded by mu.
	pending []*storeWrite
	deleted bool
	// rev is the revision of the group's record as this instance last
	// read or wrote it (revision.go). Guarded by mu.
	rev int64
	// saving counts the operators' changes of replicas (drain, activate,
	// remove) applied in memory and not yet stored: while any is, no
	// removal finishes, so that a change the store refuses can still be
	// undone (degraded.go). Guarded by mu.
	saving int
	// wmu serialises flushWrites. Lock order: wmu before mu.
	wmu sync.Mutex

	snap atomic.Pointer[frontdoor.Snapshot]
	// queue holds per-request calls while every replica is at
	// max_inflight; configured from spec.Queue, shared by its snapshots.
	queue *frontdoor.Queue

	// front door and loops; guarded by mu. fd serves a view of door,
	// whose socket is ln (doorlistener.go).
	fd       frontDoorServer
	ln       net.Listener
	door     *doorListener
	listenOn string
	loopStop chan struct{}
	loopDone chan struct{}
	running  bool
	// probes is the strategy's probe loop (probe.go); guarded by mu.
	probes *probeRun
	// leading: this instance leads the group, so it takes reports, pulls
	// and probes (leadership.go); always true on a single node. Guarded
	// by mu.
	leading bool
	// leadSince is when this instance last came to lead the group (zero
	// while it does not; leadership.go). Guarded by mu.
	leadSince time.Time
	// shownLeader and shownTerm are the group's leader and its term as
	// the last "leader" event told them (leaderevent.go).
	shownLeader string
	shownTerm   int64
	// view is the load view the group's leader last pushed here, and
	// viewTerm the highest term of a view seen (loadview.go). Guarded by
	// mu.
	view     *loadView
	viewTerm uint64
	// push is the load view to push after the step that made it, and
	// pushing is set while a push runs (loadpush.go).
	push    *protocol.LoadView
	pushing atomic.Bool
	// completed are the moves completed since the last push, for the
	// next (leaderevents.go). Guarded by mu.
	completed []protocol.CompletedMove
	// lookupMove and moveBoundFn are the snapshots' hooks of the moves
	// in etcd (leadermoves.go); nil on a single node. Set by newGroup.
	lookupMove  func(ctx context.Context, client string) (string, bool)
	moveBoundFn func(client, id string)
	// looked are the terms of the moves looked up, until their clients
	// bind (leadermoves.go).
	looked lookedUp
	// alerts counts the strategy's alerts (probe.go).
	alerts atomic.Uint64

	// fdStopped is the error that stopped fd's listener for good (not
	// Shutdown or Close): the group is then not ready. Guarded by mu.
	fdStopped error
	// fdExited is closed when fd's Serve returns. Guarded by mu.
	fdExited chan struct{}
	// fdView is the view of door that fd serves. Guarded by mu.
	fdView net.Listener
	// bindErr is why the front door could not listen at the last start
	// (nil when it did). Guarded by mu.
	bindErr error

	// rtls is the replica_tls in use (replicatls.go); pullTLS pulls from
	// https:// monitor URLs with it.
	rtls    atomic.Pointer[certs.Client]
	pullTLS *http.Client
	// tls is the front door's certificates (nil: plain; tls.go). Guarded
	// by mu.
	tls *certs.ServerSet
	// hub is a replicated group's hub while its front door runs
	// (replicated.go). Guarded by mu.
	hub *hubRun
	// aff is the group's session table (nil: no affinity rules), kept
	// across snapshots while the rules stay the same (affinity.go).
	// Guarded by mu.
	aff *affinity.Table
	// conns is the group's connection table (tcp groups), kept for the
	// group's life across front-door swaps.
	conns *conntable.Table
	// tcpDrain is when each draining replica of a tcp group was first
	// seen draining (tcpgroup.go). Guarded by mu.
	tcpDrain map[string]time.Time
	// tcpMarks are each tcp replica's bytes at its last report
	// (tcpgroup.go). Guarded by mu.
	tcpMarks map[string]*tcpMark
}

// member is one replica at run time.
type member struct {
	g        *group
	rec      protocol.Replica
	live     *strategy.Live
	counters *frontdoor.Counters
	pace     *frontdoor.Pace
	// window counts the calls the front door sent to the replica
	// (replicastats.go).
	window *frontdoor.CallWindow
	// ejections counts the replica's passive ejections (health.go).
	ejections atomic.Uint64
	url       *url.URL
	// ref is the address parsed as an object reference (GIOP groups).
	ref *ior.IOR

	pullStop chan struct{}

	// token is the token last issued to a multi-process replica, kept
	// for its sibling workers' registrations (workerreg.go); "" for a
	// single-process one. Guarded by g.mu.
	token string
	// workers holds the latest report of each worker of a multi-process
	// replica (workerreport.go). Guarded by g.mu.
	workers map[int]workerReport
}

// stateLocked is m's state, as the group's core derives it. Caller holds
// g.mu.
func (g *group) stateLocked(m *member) string { return g.core.State(m.rec.ID) }

// coreSettings are the settings of gs the group's core decides with.
func (b *Balancer) coreSettings(gs protocol.Group) groupcore.Settings {
	moves := b.tcpMovesClients(gs) // tcpgroup.go: its clients are the connection table's
	return groupcore.Settings{
		Binding: gs.Binding, Interval: gs.ReportInterval.D(), UnidentifiedClients: gs.Protocol == protocol.ProtocolGIOP,
		MoveClients: moves, ClientRatesInLoad: moves,
	}
}

func (b *Balancer) newGroup(gs protocol.Group) (*group, error) {
	s, err := strategy.New(gs.Strategy, gs.Params, strategy.Env{Now: b.now, Rand: b.opts.Rand})
	if err != nil {
		return nil, err
	}
	rtls, err := replicaTLSClient(gs)
	if err != nil {
		return nil, err
	}
	set, err := b.loadTLS(gs)
	if err != nil {
		return nil, err
	}
	g := &group{
		b:       b,
		name:    gs.Name,
		spec:    gs,
		strat:   s,
		core:    groupcore.New(s, b.coreSettings(gs)),
		members: map[string]*member{},
		subs:    map[chan Event]struct{}{},
		tls:     set,
		conns:   conntable.New(),
		aff:     b.withAffinityStore(affinityTable(nil, gs), gs.Name), // affinitystore.go
	}
	b.certMetrics.Add(set)
	g.fromConfig.Store(gs.Source == protocol.SourceConfig)
	g.leading = b.opts.Leadership == nil
	g.setReplicaTLSLocked(rtls)
	g.pullTLS = g.newPullClient()
	g.queue = frontdoor.NewQueue(g.Snapshot, b.now)
	g.queue.Configure(gs.Queue)
	g.health = newGroupHealth(g)
	g.setMoveHooks()
	g.mu.Lock()
	g.membershipChangedLocked()
	g.mu.Unlock()
	return g, nil
}

// addMemberLocked adds a member from its record, in lifecycle life.
// Caller holds g.mu (or g is not yet shared).
func (g *group) addMemberLocked(rec protocol.Replica, life groupcore.Lifecycle) *member {
	m := &member{g: g, rec: rec, live: new(strategy.Live), counters: new(frontdoor.Counters), pace: new(frontdoor.Pace), window: new(frontdoor.CallWindow)}
	g.parseAddressLocked(m)
	g.members[rec.ID] = m
	g.order = append(g.order, m)
	g.core.Add(rec.ID, rec.Weight, life)
	return m
}

// applyLocked applies a lifecycle event to m and keeps the record's
// administrative flags in step; it returns whether m's lifecycle changed.
// Caller holds g.mu.
func (g *group) applyLocked(m *member, ev groupcore.Event) bool {
	life, changed, err := g.core.Apply(m.rec.ID, ev, g.b.now())
	if err != nil || !changed {
		return false
	}
	m.rec.Draining, m.rec.Removing = life.Draining(), life.Removing()
	return true
}

func (g *group) removeMemberLocked(m *member) {
	g.core.Forget(m.rec.ID)
	delete(g.members, m.rec.ID)
	for i, o := range g.order {
		if o == m {
			g.order = append(g.order[:i], g.order[i+1:]...)
			break
		}
	}
	if m.pullStop != nil {
		close(m.pullStop)
		m.pullStop = nil
	}
}

// membershipChangedLocked tells health about the current members and
// republishes the snapshot (the core already knows). Caller holds g.mu.
func (g *group) membershipChangedLocked() {
	if g.health != nil {
		g.health.syncLocked()
	}
	g.publishLocked()
}

// publishLocked builds and swaps in a new snapshot from the last analyzer
// step and the current members. Caller holds g.mu.
func (g *group) publishLocked() {
	views := make(map[string]*analyzer.ReplicaView, len(g.lastStep.Replicas))
	for i := range g.lastStep.Replicas {
		views[g.lastStep.Replicas[i].ID] = &g.lastStep.Replicas[i]
	}
	snap := &frontdoor.Snapshot{
		Group:       g.name,
		Binding:     g.spec.Binding,
		Advertise:   g.advertiseLocked(),
		Members:     make(map[string]*frontdoor.Member, len(g.order)),
		MaxInflight: g.spec.MaxInflight,
		Queue:       g.queueLocked(),
		Timeouts:    g.spec.Timeouts,
		Retry:       g.spec.Retry,
		GIOP:        g.spec.GIOP,
		Replicated:  g.spec.Replicated, // the bridge reads max_payload and read_only per request
		TCP:         g.spec.TCP,
		Conns:       g.conns,
	}
	snap.LookupMove, snap.MoveBound = g.lookupMove, g.moveBoundFn // leadermoves.go: nil on a single node
	typeID := g.typeIDLocked()
	pushed := g.pushedViewLocked()
	var eligible []*strategy.Replica
	for _, m := range g.order {
		rep := &strategy.Replica{ID: m.rec.ID, Address: m.rec.Address, Weight: m.rec.Weight, Metrics: strategy.NoMetrics, Live: m.live}
		if pushed != nil {
			applyPushedLoad(rep, pushed.loads[m.rec.ID]) // loadview.go
		} else if v := views[m.rec.ID]; v != nil && v.Reported {
			rep.Reported = true
			rep.Load = v.Load
			rep.Metrics = metricsOf(v.Metrics)
			rep.Clients = len(v.Clients)
			g.tcpClientsLocked(rep) // tcpgroup.go
		}
		fm := &frontdoor.Member{Replica: rep, Address: m.rec.Address, URL: m.url, IOR: g.forwardIORLocked(m, typeID), State: g.stateLocked(m), Counters: m.counters, Queue: snap.Queue, Pace: m.pace, Window: m.window}
		snap.Members[m.rec.ID] = fm
		if fm.State == protocol.StateActive {
			rep.Index = len(eligible)
			eligible = append(eligible, rep)
			snap.Eligible = append(snap.Eligible, fm)
		}
	}
	snap.Picker = g.strat.Picker(eligible)
	snap.Affinity = g.affinityRouterLocked(snap.Members)
	if k, ok := g.strat.(strategy.Keyed); ok {
		snap.Key = k.KeySpec()
	}
	if o, ok := g.strat.(strategy.Observer); ok {
		snap.Observer = o
	}
	for _, mv := range g.lastStep.Planned {
		if to := snap.Members[mv.To]; to != nil {
			if snap.Planned == nil {
				snap.Planned = map[string]*frontdoor.Member{}
			}
			snap.Planned[mv.Client] = to
		}
	}
	g.snap.Store(snap)
	if snap.Queue != nil {
		// A member may have joined or come back: calls waiting take it.
		snap.Queue.Kick()
	}
}

// queueLocked is the group's queue when its settings enable one.
func (g *group) queueLocked() *frontdoor.Queue {
	if g.spec.Queue.Enabled() && g.spec.Binding == protocol.PerRequest {
		return g.queue
	}
	return nil
}

func metricsOf(m map[string]float64) strategy.Metrics {
	out := strategy.NoMetrics
	get := func(k string, dst *float64) {
		if v, ok := m[k]; ok {
			*dst = v
		}
	}
	get(protocol.MetricInflight, &out.Inflight)
	get(protocol.MetricRPS, &out.RPS)
	get(protocol.MetricLatencyMS, &out.LatencyMS)
	get(protocol.MetricCPU, &out.CPU)
	get(protocol.MetricUtilization, &out.Utilization)
	get(protocol.MetricEPS, &out.EPS)
	get(protocol.MetricBW, &out.BW)
	get(protocol.MetricCPUOther, &out.CPUOther)
	return out
}

// advertiseLocked is the group's public front door URL: the configured
// advertise, or one derived from the address actually bound (port 0).
func (g *group) advertiseLocked() string {
	if g.ln != nil && g.spec.Advertise == registry.GroupAdvertise(g.spec, g.spec.FrontDoor) {
		return registry.GroupAdvertise(g.spec, g.ln.Addr().String())
	}
	return g.spec.Advertise
}

// Snapshot implements frontdoor.Group.
func (g *group) Snapshot() *frontdoor.Snapshot { return g.snap.Load() }

// Bound implements frontdoor.Group: counts the binding and, for a client
// with a planned move, completes the move in the analyzer.
func (g *group) Bound(m *frontdoor.Member, client string, moved bool) {
	m.Replica.Live.Bindings.Add(1)
	m.Counters.Bindings.Add(1)
	if moved {
		m.Counters.Rebinds.Add(1)
	}
	snap := g.snap.Load()
	if client == "" || snap.Planned == nil {
		return
	}
	if _, planned := snap.Planned[client]; !planned {
		return
	}
	g.mu.Lock()
	g.core.Bound(client, m.ID())
	g.moveCompletedLocked(client)                        // leadermoves.go: in a cluster
	g.completedLocked(client, m.ID(), g.b.opts.Instance) // leaderevents.go
	g.emitLocked("binding", map[string]any{"client": client, "replica": m.ID(), "planned": true})
	g.mu.Unlock()
}

// Observe implements frontdoor.Group: passive health, and the member's
// call window (its rate and latencies in the status).
func (g *group) Observe(m *frontdoor.Member, latency time.Duration, failed bool) {
	if failed {
		m.Counters.Failures.Add(1)
	}
	if m.Window != nil {
		m.Window.Record(g.b.now(), latency, !failed)
	}
	g.health.observe(m.ID(), failed)
}

// start opens the front door and starts the analyzer loop and pollers.
func (g *group) start() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running {
		return nil
	}
	err := g.startHubLocked() // replicated.go: before the front door, which orders through it
	if err == nil {
		if err = g.startFrontDoorLocked(); err != nil {
			g.takeHubLocked().close()
		}
	}
	g.bindErr = err
	g.b.frontDoorsChanged()
	if err != nil {
		return err
	}
	g.loopStop = make(chan struct{})
	g.loopDone = make(chan struct{})
	go g.loop(g.loopStop, g.loopDone)
	g.joinLocked() // leadership.go
	for _, m := range g.order {
		g.startPullLocked(m)
	}
	g.health.startLocked()
	g.running = true
	g.startProbesLocked() // probe.go
	g.queue.Configure(g.spec.Queue)
	g.publishLocked()
	return nil
}

func (g *group) startFrontDoorLocked() error {
	addr := g.frontDoorLocked()
	ln, err := g.b.listenFor(g.name, addr)
	if err != nil {
		return err
	}
	g.ln = ln
	g.door = newDoorListener(ln)
	g.listenOn = addr
	g.serveLocked()
	g.b.frontDoorsChanged()
	g.b.log.Info("front door listening", "group", g.name, "protocol", g.spec.Protocol, "addr", ln.Addr().String(), "binding", g.spec.Binding)
	return nil
}

// serveLocked starts a new front door of the group's protocol on g.door
// and makes it g.fd. Caller holds g.mu.
func (g *group) serveLocked() {
	g.fd = g.newFrontDoorLocked()
	g.fdStopped = nil
	fd, exited, ln := g.fd, make(chan struct{}), g.door.view()
	g.fdExited, g.fdView = exited, ln
	go func() {
		defer close(exited)
		if err := fd.Serve(ln); err != nil && !serverClosed(err) {
			g.mu.Lock()
			// A front door replaced or stopped (its listener closed
			// first) is not a failure.
			if g.fd == fd {
				g.b.log.Error("front door stopped", "group", g.name, "err", err)
				g.fdStopped = err
				g.b.frontDoorsChanged()
			}
			g.mu.Unlock()
		}
	}()
}

// swapFrontDoorLocked replaces the running front door with a new one, of
// the settings in g.spec, on the same listener: new connections go to the
// new one, open ones finish on the old one, which is returned for the
// caller to shut down (retire) after releasing g.mu. Caller holds g.mu
// and g.running is true.
func (g *group) swapFrontDoorLocked() frontDoorServer {
	old, oldView := g.fd, g.fdView
	g.serveLocked()
	// The old front door takes no connection from now on: one accepted
	// after the change (a PUT that returned) reaches the new one, even
	// before the old one's shutdown in the background gets to its
	// listener.
	_ = oldView.Close()
	g.b.log.Info("front door replaced on the same listener", "group", g.name, "protocol", g.spec.Protocol, "addr", g.ln.Addr().String())
	return old
}

// retire shuts down a front door replaced by another, bounded by
// timeouts.request, in the background.
func retire(fd frontDoorServer, gs protocol.Group) {
	if fd == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), gs.Timeouts.Request.D())
		defer cancel()
		_ = fd.Shutdown(ctx)
	}()
}

func (g *group) serving() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running && g.fd != nil && g.fdStopped == nil
}

// stop shuts the front door down (finishing calls in flight, bounded by
// ctx) and stops the loops.
func (g *group) stop(ctx context.Context) error {
	g.mu.Lock()
	if !g.running {
		g.closeSubsLocked()
		if g.bindErr != nil {
			g.b.frontDoorsChanged() // its bind error goes with it
		}
		g.mu.Unlock()
		return nil
	}
	g.running = false
	fd, door := g.fd, g.door
	hub := g.takeHubLocked() // closed once the front door has finished its calls
	g.fd, g.ln, g.door = nil, nil, nil
	close(g.loopStop)
	done := g.loopDone
	for _, m := range g.order {
		if m.pullStop != nil {
			close(m.pullStop)
			m.pullStop = nil
		}
	}
	g.health.stopLocked()
	g.queue.Configure(protocol.Queue{}) // calls waiting are answered 503
	probesDone := g.stopProbesLocked()  // probe.go
	g.closeSubsLocked()
	g.b.frontDoorsChanged()
	g.mu.Unlock()
	if door != nil {
		_ = door.Close() // new connections are refused from now on
	}
	<-done
	if probesDone != nil {
		<-probesDone
	}
	g.leave(ctx) // leadership.go
	g.pullTLS.CloseIdleConnections()
	var err error
	if fd != nil {
		err = fd.Shutdown(ctx)
	}
	hub.close()
	return err
}

// update applies new settings to a running group: strategy and binding at
// once, on the next snapshot; a new front door address rebinds the
// listener (calls in flight on the old one finish); a new protocol or new
// timeouts replace the front door on the same listener (open connections
// finish on the old one).
func (g *group) update(gs protocol.Group) error {
	s, err := strategy.New(gs.Strategy, gs.Params, strategy.Env{Now: g.b.now, Rand: g.b.opts.Rand})
	if err != nil {
		return err
	}
	rtls, err := replicaTLSClient(gs)
	if err != nil {
		return err
	}
	g.mu.Lock()
	tlsChanged := !sameTLS(g.spec, gs)
	g.mu.Unlock()
	var set *certs.ServerSet
	if tlsChanged {
		if set, err = g.b.loadTLS(gs); err != nil {
			return err
		}
	}
	g.mu.Lock()
	// The addresses' protocol changes with the protocol, and with the
	// binding to or from replicated (a replicated group's replicas are
	// agents addressed by URL: registry.AddressProtocol).
	protoChanged := gs.Protocol != g.spec.Protocol || registry.AddressProtocol(gs) != registry.AddressProtocol(g.spec)
	var oldFD frontDoorServer
	newDoor := needsNewFrontDoor(g.spec, gs)
	if g.running && replicatedChanged(g.spec, gs) {
		// replicated.go: the log is reopened with the new settings (one
		// group's log is open once), so calls the old front door still
		// orders fail (503); the new front door orders through the new
		// hub.
		g.takeHubLocked().close()
		g.spec.Binding, g.spec.Replicated = gs.Binding, gs.Replicated
		if err := g.startHubLocked(); err != nil {
			g.b.log.Error("replicated group: cannot open its log with the new settings; its front door answers without it", "group", g.name, "err", err)
		}
	}
	switch {
	case g.running && g.frontDoorFor(gs) != g.listenOn:
		old, oldLn, oldDoor, oldAddr, oldProto, oldTimeouts := g.fd, g.ln, g.door, g.listenOn, g.spec.Protocol, g.spec.Timeouts
		g.spec.FrontDoor, g.spec.Protocol, g.spec.Timeouts = gs.FrontDoor, gs.Protocol, gs.Timeouts
		g.publishLocked() // the new front door reads its timeouts from the snapshot
		if err := g.startFrontDoorLocked(); err != nil {
			g.fd, g.ln, g.door, g.listenOn = old, oldLn, oldDoor, oldAddr
			g.spec.FrontDoor, g.spec.Protocol, g.spec.Timeouts = oldAddr, oldProto, oldTimeouts
			g.publishLocked()
			g.mu.Unlock()
			return err
		}
		_ = oldDoor.Close() // the old address stops accepting at once
		oldFD = old
	case g.running && newDoor:
		g.spec.Protocol, g.spec.Timeouts = gs.Protocol, gs.Timeouts
		g.publishLocked() // the new front door reads its timeouts from the snapshot
		oldFD = g.swapFrontDoorLocked()
	}
	if gs.ReplicaTLS != g.spec.ReplicaTLS {
		g.setReplicaTLSLocked(rtls)
		g.closeIdleReplicaConnsLocked()
	}
	g.spec = gs
	g.aff = g.b.withAffinityStore(affinityTable(g.aff, gs), g.name)
	if tlsChanged {
		g.setTLSLocked(set) // for the front door's next connections
	}
	dropped := false
	if protoChanged {
		dropped = g.dropInvalidAddressesLocked("protocol changed")
		for _, m := range g.order {
			g.parseAddressLocked(m)
		}
	}
	g.fromConfig.Store(gs.Source == protocol.SourceConfig)
	g.strat = s
	g.stopProbesLocked() // probe.go: the new strategy probes afresh
	g.startProbesLocked()
	g.core.SetStrategy(s)
	g.core.Configure(g.b.coreSettings(gs))
	g.joinLocked() // the report interval may have changed
	g.health.configureLocked()
	g.queue.Configure(gs.Queue)
	g.membershipChangedLocked()
	if dropped {
		g.emitLocked("membership", g.membersEventLocked())
	}
	g.emitLocked("config", map[string]any{"strategy": gs.Strategy, "params": gs.Params, "binding": gs.Binding})
	g.mu.Unlock()
	retire(oldFD, gs)
	return nil
}

// needsNewFrontDoor reports whether a front door serving settings old
// cannot take settings next in place, and must be replaced by a new one on
// the same listener: another protocol, or new timeouts (which net/http and
// the lean engine take at construction). A setting a front door reads at
// construction (tls on or off, say) belongs here.
//
// A replicated group's front door is a bridge to its log: the binding
// changing to or from replicated, or the replicated block changing,
// replaces it too.
func needsNewFrontDoor(old, next protocol.Group) bool {
	return old.Protocol != next.Protocol || old.Timeouts != next.Timeouts || replicatedChanged(old, next)
}

// replicatedChanged reports whether the binding changed to or from
// replicated, or the replicated block of a replicated group changed.
func replicatedChanged(old, next protocol.Group) bool {
	ro, rn := registry.IsReplicated(old), registry.IsReplicated(next)
	return ro != rn || ro && !reflect.DeepEqual(old.Replicated, next.Replicated)
}

// loop runs a step every report interval, on the balancer's clock.
func (g *group) loop(stop, done chan struct{}) {
	defer close(done)
	g.mu.Lock()
	interval := g.spec.ReportInterval.D()
	g.mu.Unlock()
	t := g.b.clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
		}
		g.mu.Lock()
		g.stepLocked()
		if cur := g.spec.ReportInterval.D(); cur != interval {
			interval = cur
			t.Reset(interval)
		}
		push := g.push
		g.push = nil
		g.mu.Unlock()
		g.flushWrites()
		g.pushLoads(push) // loadpush.go
	}
}

// stepLocked runs one step of the core, clears the per-balance loads it
// says to, drops the members whose removal finished (queueing their store
// deletes) and republishes. Caller holds g.mu and flushes after releasing
// it.
func (g *group) stepLocked() {
	now := g.b.now()
	g.syncLeadershipLocked() // in case a change's notice is still on its way
	r := g.roleLocked()
	g.leaderEventLocked(r) // leaderevent.go
	if g.health.tickLocked() {
		g.membershipChangedLocked()
		g.emitLocked("membership", g.membersEventLocked())
	}
	lead := g.leadLocked(r, now)
	if g.saving > 0 {
		lead.Remove = false // an operator's change may yet be undone
	}
	g.expireAffinityLocked()
	g.lastStep = g.core.StepAs(now, func(id string) int64 {
		if m := g.members[id]; m != nil {
			return m.live.Inflight.Load()
		}
		return 0
	}, lead)
	for _, id := range g.lastStep.Reset {
		if m := g.members[id]; m != nil {
			m.live.ResetExtra()
			m.live.Bindings.Store(0)
		}
	}
	for _, id := range g.lastStep.Removed {
		m := g.members[id]
		if m == nil {
			continue
		}
		g.removeMemberLocked(m)
		g.b.forgetToken(m)
		g.queueWriteLocked(&storeWrite{delReplica: id, fenced: true}) // the leader's alone: fenced.go
		g.b.log.Info("replica removed", "group", g.name, "replica", id)
	}
	if len(g.lastStep.Removed) > 0 {
		g.membershipChangedLocked()
		g.emitLocked("membership", g.membersEventLocked())
	}
	g.drainConnsLocked(now)     // tcpgroup.go
	g.commitMovesLocked(r, now) // leadermoves.go: before the advisories are answered
	g.publishLocked()
	g.push = g.loadViewLocked(r)
	g.emitLocked("step", g.stepEventLocked())
}

func (b *Balancer) forgetToken(m *member) {
	b.mu.Lock()
	if b.tokens[m.rec.TokenHash] == m {
		delete(b.tokens, m.rec.TokenHash)
	}
	b.mu.Unlock()
}
