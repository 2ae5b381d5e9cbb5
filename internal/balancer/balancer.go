// Package balancer is fulcrum's running service: it owns the groups, their
// replicas and tokens (persisted through the registry), runs one analyzer
// loop per group, publishes the immutable snapshots front doors pick on, and
// starts and stops the front doors, pull pollers and health probes.
//
// It is the thin concurrent layer around the pure cores (groupcore, which
// wraps the analyzer; strategy; health): every decision is made there —
// replica states, advisories, steps, the per-balance reset, the end of
// removals — and this package only feeds them events under the group's
// lock, publishes their results as snapshots and writes the changes to the
// store after releasing the lock, in the order they were made (writes.go).
// Time, listeners and dialers come through Options (Clock, Listen, Dial),
// so that its tests run the loops inside testing/synctest bubbles on an
// in-memory network.
package balancer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/moves"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/internal/workflow"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Options configure a Balancer.
type Options struct {
	// Store persists groups, replicas and tokens. Required.
	Store store.Store
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// JoinToken is the global join token ("" = none).
	JoinToken string
	// AccessLog, when not nil, receives one line per front door request.
	AccessLog io.Writer
	// AccessLogJSON writes the access log as JSON lines instead of logfmt.
	AccessLogJSON bool
	// HTTPEngine is the HTTP front doors' engine (httpdoor.EngineLean,
	// the default when empty, or httpdoor.EngineStdlib).
	HTTPEngine string
	// AdminURL is the admin API's public base URL, used in registration
	// answers (report_url).
	AdminURL string
	// AdminAddr is the admin API's listen address as bound (host:port);
	// replica addresses that lead to it are refused (LoopError), as are
	// ones that lead to a front door. Empty: not checked.
	AdminAddr string
	// Local returns the machine's interface addresses and names, against
	// which replica addresses are checked for loops; net.InterfaceAddrs
	// and os.Hostname when nil.
	Local func() registry.Local
	// Clock reads the time and makes the tickers of the step loops, report
	// pullers, health probers and strategy probe loops; the system clock
	// when nil.
	Clock clock.Clock
	// Listen opens the front doors' listeners; net.Listen when nil.
	Listen func(network, addr string) (net.Listener, error)
	// Dial opens the connections of pull polls (with the default
	// HTTPClient), health probes (HTTP and GIOP), strategy probes and the
	// front doors' calls to replicas (HTTP and GIOP); a net.Dialer's when
	// nil.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Rand seeds strategies; a time-seeded source when nil.
	Rand strategy.Rand
	// HTTPClient is used for pull polls; a client with short timeouts
	// that dials with Dial when nil.
	HTTPClient *http.Client
	// SharedConfig says the store is shared by several instances (etcd):
	// ApplyConfig and Reload create the groups the file declares when the
	// store has none of that name and never change or delete a stored
	// group, logging a difference as a warning that names the fields
	// (sharedconfig.go); changes through the API are not reverted.
	SharedConfig bool
	// Follow makes the balancer, once started, watch the store and apply
	// the changes other writers (other instances) make to it (follow.go).
	Follow bool
	// Peers, when set, returns the other live instances of the cluster
	// (cluster.go): replica addresses at their listeners are refused, and
	// GIOP groups' IORs list their front doors. It is called often and
	// must not block.
	Peers func() []Peer
	// OnFrontDoors, when set, is called whenever a front door on this
	// instance starts listening, moves, fails or stops; FrontDoors then
	// tells where they are. It may be called with the balancer's locks
	// held: it must not block nor call the Balancer.
	OnFrontDoors func()
	// Leadership, in a cluster, elects each group's analyzer leader
	// (leadership.go; a *leader.Elector whose OnChange calls
	// LeadershipChanged). Nil on a single node: this instance leads every
	// group, with term 0.
	Leadership Leadership
	// PeerURL returns another instance's admin base URL by its name, for
	// the 307 that sends a report to the group's leader and the bound
	// notices to it (boundnotice.go); nil, or false:
	// unknown (the report is answered 503 no_leader).
	PeerURL func(instance string) (string, bool)
	// PeerAdminURLs returns the admin base URLs of the other live
	// instances, to which a group's leader pushes its load view
	// (loadpush.go); nil: none.
	PeerAdminURLs func() []string
	// PeerToken returns the admin token the load pushes and bound
	// notices (boundnotice.go) carry ("" none).
	PeerToken func() string
	// PeerClient makes the load pushes and bound notices; a client with a
	// short timeout that dials with Dial, verifying https:// peers with
	// the system roots, when nil.
	PeerClient *http.Client
	// Moves, in a cluster, keeps the planned moves in etcd: the leader
	// commits its moves there, and every front door looks a rebinding
	// client's move up there (leadermoves.go). Nil on a single node.
	Moves *moves.Store
	// Instance is this instance's name: the origin of the entries its
	// replicated groups append, which PeerURL maps back to its admin API.
	Instance string
	// ReplicatedLog opens the log of a replicated group (replicated.go)
	// with its limits and session TTL; the hub closes it when the group
	// stops or its replicated settings change. `fulcrum serve` opens one
	// bbolt file, log.db in the data directory, on a single node and
	// etcd's log in a cluster. Nil: replicated groups cannot start
	// (ErrNoReplicatedLog).
	ReplicatedLog func(group string, limits replog.Limits, sessionTTL time.Duration) (replog.Log, error)
}

// Balancer is the running service. Safe for concurrent use.
type Balancer struct {
	opts  Options
	log   *slog.Logger
	reg   *groupstore.Records
	clock clock.Clock
	now   func() time.Time

	// lookupMu lets one store lookup of an unknown token run at a time
	// (leaderreport.go).
	lookupMu sync.Mutex

	mu     sync.RWMutex
	groups map[string]*group
	// events numbers and keeps every group's events (eventlog.go).
	events *eventLog
	tokens map[string]*member // token hash → member
	closed bool

	// joinToken is the global join token, Options.JoinToken until
	// SetJoinToken.
	joinToken atomic.Pointer[string]
	// accessLog is Options.AccessLog until SetAccessLog.
	accessLog atomic.Pointer[accessLog]

	// reloadMu serialises Reload and guards declared, the settings the
	// config file last declared for each group (ApplyConfig, Reload); preMu
	// guards prebound, the listeners a reload bound ahead (reload.go).
	reloadMu sync.Mutex
	declared map[string]protocol.Group
	// adminMu serialises the writes of groups' settings (revision.go).
	// Lock order: reloadMu before adminMu before mu.
	adminMu sync.Mutex
	// followMu is held while a change of the store is applied: by the
	// watch (follow.go) or by a lookup of a record unknown here
	// (storedlookup.go), so that a lookup cannot bring back what the watch
	// has just deleted. Lock order: followMu before adminMu; a caller
	// holding adminMu or reloadMu never looks a record up.
	followMu sync.Mutex
	preMu    sync.Mutex
	prebound map[string]prebound
	// localDoors are the front doors this instance's config file declares
	// by group, with SharedConfig (cluster.go); guarded by localMu, which
	// is taken last.
	localMu    sync.Mutex
	localDoors map[string]string

	ctx    context.Context
	cancel context.CancelFunc

	// certMetrics exports the served certificates' expiry (tls.go);
	// extraCerts are those of WatchCertificates (guarded by mu).
	certMetrics *certs.Collector
	extraCerts  []*certs.ServerSet
	// adminURL is Options.AdminURL until SetAdminURL replaces it.
	adminURL atomic.Pointer[string]
	// pollDone is closed when the certificate poll ends (nil until Start).
	pollDone chan struct{}
	// async counts the background calls to other instances and etcd
	// running (load pushes, loadpush.go; move completions,
	// leadermoves.go; bound notices, boundnotice.go). They start through
	// goAsync, which starts none once Shutdown has cancelled ctx:
	// asyncMu orders those starts before Shutdown's Wait.
	async   sync.WaitGroup
	asyncMu sync.Mutex
	// loadedRev is the store's revision New loaded the state at.
	loadedRev int64
	// stopFollow ends the watch of the store (Options.Follow); followDone
	// is closed when it has ended. Both nil until Start; guarded by mu.
	stopFollow context.CancelFunc
	followDone chan struct{}
	// resync asks the follower to load the store again (degraded.go).
	resync chan struct{}
	// notices are the bindings by planned moves queued for the groups'
	// leaders (boundnotice.go); peerFails counts the failed calls to
	// other instances (peerfailures.go).
	notices   noticeQueue
	peerFails *peerFailures
	// replMetrics count the replicated groups' appends and divergent
	// replies (replicatedmetrics.go).
	replMetrics *replicatedMetrics
	// outcallClient forwards replicated groups' outcalls (outcalls.go).
	outcallClient *http.Client
	// workflows runs the groups' work-flows (workflows.go).
	workflows *workflow.Executor
}

// New loads the persisted groups and replicas. Front doors are not started
// until Start.
func New(opts Options) (*Balancer, error) {
	if opts.Store == nil {
		return nil, errors.New("balancer: Options.Store is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.Listen == nil {
		opts.Listen = net.Listen
	}
	if opts.Rand == nil {
		opts.Rand = strategy.NewRand(uint64(time.Now().UnixNano()))
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 5 * time.Second}
		if opts.Dial != nil {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DialContext = opts.Dial
			opts.HTTPClient.Transport = tr
		}
	}
	if opts.PeerClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone() // its own idle connections, closed at Shutdown
		if opts.Dial != nil {
			tr.DialContext = opts.Dial
		}
		opts.PeerClient = &http.Client{Timeout: 5 * time.Second, Transport: tr}
	}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{}).DialContext
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Balancer{
		opts:     opts,
		log:      opts.Logger,
		reg:      groupstore.New(opts.Store),
		clock:    opts.Clock,
		now:      opts.Clock.Now,
		groups:   map[string]*group{},
		events:   newEventLog(eventsName(opts.Instance), EventReplay),
		tokens:   map[string]*member{},
		declared: map[string]protocol.Group{},
		ctx:      ctx,
		cancel:   cancel,

		certMetrics: certs.NewCollector(),
		resync:      make(chan struct{}, 1),
		notices:     noticeQueue{wake: make(chan struct{}, 1)},
		peerFails:   newPeerFailures(),
		replMetrics: newReplicatedMetrics(),
	}
	b.outcallClient = newOutcallClient(opts.Dial)
	b.workflows = workflow.New(workflow.Options{Clock: opts.Clock, Logger: opts.Logger})
	b.joinToken.Store(&opts.JoinToken)
	b.accessLog.Store(&accessLog{w: opts.AccessLog, json: opts.AccessLogJSON})
	b.adminURL.Store(&opts.AdminURL)
	load := b.reg.Load
	if opts.Follow {
		// Others write the store too: a record this fulcrum cannot
		// decode is theirs to fix, and must not stop this one.
		load = func() (groupstore.Snapshot, error) {
			return b.reg.LoadSkipping(func(key string, err error) {
				b.log.Warn("store key cannot be decoded; skipped", "key", key, "err", err)
			})
		}
	}
	snap, err := load()
	if err != nil {
		cancel()
		return nil, err
	}
	b.loadedRev = snap.Rev
	for _, gs := range snap.Groups {
		gs = registry.WithDefaults(gs)
		if err := registry.Validate(gs); err != nil {
			b.log.Warn("stored group is invalid; skipped", "group", gs.Name, "err", err)
			continue
		}
		g, err := b.newGroup(gs)
		if err != nil {
			b.log.Warn("stored group cannot be built; skipped", "group", gs.Name, "err", err)
			continue
		}
		g.rev = snap.GroupRevs[gs.Name]
		b.groups[gs.Name] = g
	}
	sort.SliceStable(snap.Replicas, func(i, j int) bool { return snap.Replicas[i].Created.Before(snap.Replicas[j].Created) })
	for _, rec := range snap.Replicas {
		g := b.groups[rec.Group]
		if g == nil {
			continue
		}
		m := g.addMemberLocked(rec, groupcore.Restored(rec.Draining, rec.Removing, b.now()))
		b.tokens[rec.TokenHash] = m
	}
	for _, blk := range snap.Blocks {
		if g := b.groups[blk.Group]; g != nil {
			g.restoreBlockLocked(blk)
		}
	}
	for _, h := range snap.Health {
		if g := b.groups[h.Group]; g != nil {
			g.applyStoredHealthLocked(h.ID, h.State) // leaderhealth.go; none on a single node
		}
	}
	for _, g := range b.groups {
		g.mu.Lock()
		// A group stored with one protocol may hold replicas registered
		// under another (its protocol changed by an older version).
		g.dropInvalidAddressesLocked("stored replica loaded at start")
		g.membershipChangedLocked()
		g.mu.Unlock()
		g.flushWrites()
	}
	return b, nil
}

// ApplyConfig applies the groups declared in the config file: the file wins
// for what it declares. A stored group that differs from its declaration
// (a run-time change) is reverted, with a warning. With
// Options.SharedConfig it only creates the groups absent from the store
// (sharedconfig.go).
func (b *Balancer) ApplyConfig(groups []protocol.Group) error {
	b.reloadMu.Lock()
	defer b.reloadMu.Unlock()
	if b.opts.SharedConfig {
		_, err := b.applyShared(groups, false)
		return err
	}
	b.declared = map[string]protocol.Group{}
	declared := map[string]bool{}
	for _, gs := range groups {
		declared[gs.Name] = true
	}
	b.mu.RLock()
	var dropped []string
	for name, g := range b.groups {
		if g.fromConfig.Load() && !declared[name] {
			dropped = append(dropped, name)
		}
	}
	b.mu.RUnlock()
	for _, name := range dropped {
		b.log.Warn("group is no longer declared in the config file; deleting it", "group", name)
		if err := b.deleteGroup(name); err != nil {
			return fmt.Errorf("group %s: %w", name, err)
		}
	}
	for _, gs := range groups {
		gs = registry.WithDefaults(gs)
		gs.Source = protocol.SourceConfig
		if err := registry.Validate(gs); err != nil {
			return fmt.Errorf("group %s: %w", gs.Name, err)
		}
		if err := b.checkGroupLoops(gs, false); err != nil {
			return fmt.Errorf("group %s: %w", gs.Name, err)
		}
		if old, err := b.reg.GetGroup(gs.Name); err == nil && !sameSettings(registry.WithDefaults(old), gs) {
			b.log.Warn("group is declared in the config file; reverting run-time changes", "group", gs.Name)
		}
		if _, _, err := b.putGroup(gs, false); err != nil {
			return fmt.Errorf("group %s: %w", gs.Name, err)
		}
		b.declared[gs.Name] = gs
	}
	return nil
}

// Start starts every group's front door and loops. It fails if a front
// door cannot listen. Stored replicas whose address leads back into the
// balancer, as its listeners are now bound, are removed (loop.go).
func (b *Balancer) Start() error {
	if err := b.startGroups(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.pollDone == nil && !b.closed {
		b.pollDone = make(chan struct{})
		go b.pollCertificates(b.pollDone)
	}
	if b.opts.Follow && b.followDone == nil && !b.closed {
		var ctx context.Context
		ctx, b.stopFollow = context.WithCancel(b.ctx)
		b.followDone = make(chan struct{})
		go b.follow(ctx, b.loadedRev, b.followDone) // follow.go
	}
	if !b.closed {
		b.startNoticeSender() // boundnotice.go
	}
	b.mu.Unlock()
	b.dropLoopingReplicas()
	return nil
}

func (b *Balancer) startGroups() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	names := make([]string, 0, len(b.groups))
	for n := range b.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := b.groups[n].start(); err != nil {
			if b.opts.SharedConfig && b.localDoor(n) == "" {
				// A group of the shared store this instance's file does
				// not declare: kept, not ready, its error shown
				// (FrontDoors).
				b.log.Error("stored group: its front door cannot listen here", "group", n, "err", err)
				continue
			}
			return fmt.Errorf("group %s: %w", n, err)
		}
	}
	return nil
}

// Shutdown stops every front door (finishing calls in flight, bounded by
// ctx) and every loop.
func (b *Balancer) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	stopFollow, followDone := b.stopFollow, b.followDone
	b.mu.Unlock()
	if stopFollow != nil {
		stopFollow() // before the groups stop: it creates groups
		<-followDone
	}
	b.mu.Lock()
	b.closed = true
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(groups))
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.stop(ctx)
		}()
	}
	wg.Wait()
	b.cancel()
	b.workflows.Close() // workflows.go
	b.asyncMu.Lock()    // no goAsync starts after this: ctx is done
	b.asyncMu.Unlock()
	b.async.Wait() // ended by the cancel
	b.mu.RLock()
	pollDone := b.pollDone
	b.mu.RUnlock()
	if pollDone != nil {
		<-pollDone
	}
	b.opts.HTTPClient.CloseIdleConnections() // the pull polls'
	b.opts.PeerClient.CloseIdleConnections() // the load pushes'
	b.outcallClient.CloseIdleConnections()   // outcalls.go
	return errors.Join(errs...)
}

// Ready reports whether every group's front door is serving.
func (b *Balancer) Ready() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return false
	}
	for _, g := range b.groups {
		if !g.serving() {
			return false
		}
	}
	return true
}

// JoinAllowed reports whether token is a join token for group (the group's
// own or the global one).
func (b *Balancer) JoinAllowed(groupName, token string) bool {
	if token == "" {
		return false
	}
	if jt := *b.joinToken.Load(); jt != "" && constantEq(token, jt) {
		return true
	}
	b.mu.RLock()
	g := b.groups[groupName]
	b.mu.RUnlock()
	if g == nil {
		return false
	}
	g.mu.Lock()
	jt := g.spec.JoinToken
	g.mu.Unlock()
	return jt != "" && constantEq(token, jt)
}

// ReplicaTokenAllowed reports whether token is replica id's own token.
func (b *Balancer) ReplicaTokenAllowed(groupName, id, token string) bool {
	b.mu.RLock()
	m := b.tokens[registry.HashToken(token)]
	b.mu.RUnlock()
	if m == nil {
		return false
	}
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	return m.g.name == groupName && m.rec.ID == id
}

func constantEq(a, b string) bool {
	return registry.TokenMatches(a, registry.HashToken(b))
}

// group returns the group of that name, looking it up in the store when
// it is unknown here and the balancer follows the store (storedlookup.go).
// Not for a caller that holds b.adminMu (localGroup).
func (b *Balancer) group(name string) (*group, error) {
	g, err := b.localGroup(name)
	if err != nil {
		if sg := b.storedGroup(name); sg != nil {
			return sg, nil
		}
	}
	return g, err
}

// localGroup returns the group of that name known here.
func (b *Balancer) localGroup(name string) (*group, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	g := b.groups[name]
	if g == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownGroup, name)
	}
	return g, nil
}

// Groups returns every group's status, sorted by name.
func (b *Balancer) Groups() []protocol.GroupStatus {
	b.mu.RLock()
	gs := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		gs = append(gs, g)
	}
	b.mu.RUnlock()
	out := make([]protocol.GroupStatus, 0, len(gs))
	for _, g := range gs {
		out = append(out, g.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Group returns one group's status.
func (b *Balancer) Group(name string) (protocol.GroupStatus, error) {
	g, err := b.group(name)
	if err != nil {
		return protocol.GroupStatus{}, err
	}
	return g.status(), nil
}

// PutGroup creates or replaces a group from the API. created is true when
// it did not exist.
func (b *Balancer) PutGroup(gs protocol.Group) (protocol.GroupStatus, bool, error) {
	return b.PutGroupIf(gs, Match{})
}

// PutGroupIf is PutGroup if the group's revision satisfies m, and fails
// with a *RevisionError otherwise (revision.go).
func (b *Balancer) PutGroupIf(gs protocol.Group, m Match) (protocol.GroupStatus, bool, error) {
	gs = registry.WithDefaults(gs)
	gs.Source = protocol.SourceAPI
	if err := registry.Validate(gs); err != nil {
		return protocol.GroupStatus{}, false, err
	}
	if err := b.checkGroupLoops(gs, true); err != nil {
		return protocol.GroupStatus{}, false, err
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	b.mu.RLock()
	old := b.groups[gs.Name]
	b.mu.RUnlock()
	warning := ""
	if old != nil && old.fromConfig.Load() && b.opts.SharedConfig {
		gs.Source = protocol.SourceConfig // where it came from; the API owns it
	} else if old != nil && old.fromConfig.Load() {
		gs.Source = protocol.SourceConfig
		warning = "group " + gs.Name + " is declared in the config file; this change will be reverted at the next start or reload"
		b.log.Warn("run-time change to a config-declared group", "group", gs.Name)
	}
	g, created, err := b.putGroupLocked(gs, true, m)
	if err != nil {
		return protocol.GroupStatus{}, false, err
	}
	b.dropLoopingReplicas() // a front door on port 0 may have got a replica's port
	st := g.status()
	st.Warning = warning
	return st, created, nil
}

// putGroup stores and applies gs (already defaulted and validated). When
// start is true a new front door is started at once.
func (b *Balancer) putGroup(gs protocol.Group, start bool) (*group, bool, error) {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	return b.putGroupLocked(gs, start, Match{})
}

// putGroupLocked is putGroup if the group's revision satisfies m: it reads
// the revision, applies gs and writes it in a transaction conditioned on
// that revision, and tries again when another writer changed the record
// in between (revision.go). Caller holds b.adminMu.
func (b *Balancer) putGroupLocked(gs protocol.Group, start bool, m Match) (*group, bool, error) {
	for attempt := 1; ; attempt++ {
		b.mu.RLock()
		closed := b.closed
		b.mu.RUnlock()
		if closed {
			return nil, false, ErrClosed
		}
		if err := b.StoreUnreachable(); err != nil {
			return nil, false, err // degraded.go
		}
		cur, err := b.reg.GroupRevision(gs.Name)
		if err != nil {
			return nil, false, err
		}
		if !m.holds(cur) {
			return nil, false, &RevisionError{Group: gs.Name, Match: m, Current: cur}
		}
		g, created, err := b.applyGroup(gs, start, cur)
		var ce *groupstore.ConflictError
		if !errors.As(err, &ce) {
			return g, created, err
		}
		if m.Rev != 0 || m.None {
			return nil, false, &RevisionError{Group: gs.Name, Match: m, Current: ce.Current}
		}
		if attempt == writeAttempts {
			return nil, false, fmt.Errorf("balancer: group %s changed under each of %d writes: %w", gs.Name, writeAttempts, err)
		}
		b.log.Info("group changed by another writer; writing again on its new revision", "group", gs.Name, "revision", ce.Current)
	}
}

// applyGroup applies gs and stores it in a transaction conditioned on the
// group's record being at revision rev. When the store refuses (a
// *groupstore.ConflictError) or fails (degraded.go), the in-memory change
// is undone.
func (b *Balancer) applyGroup(gs protocol.Group, start bool, rev int64) (*group, bool, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, false, ErrClosed
	}
	g := b.groups[gs.Name]
	b.mu.Unlock()
	if g != nil {
		g.mu.Lock()
		old := g.spec
		g.mu.Unlock()
		if err := g.update(gs); err != nil {
			return nil, false, err
		}
		g.mu.Lock()
		gw := g.queueWriteLocked(&storeWrite{putGroup: &gs, groupRev: rev})
		writes := append([]*storeWrite{gw}, g.syncStaticLocked()...)
		g.mu.Unlock()
		g.flushWrites()
		if gw.err != nil {
			if err := g.update(old); err != nil {
				b.log.Error("cannot undo a group change the store refused", "group", gs.Name, "err", err)
			}
			g.mu.Lock()
			writes := g.syncStaticLocked()
			g.mu.Unlock()
			g.flushWrites()
			if err := writeErr(writes...); err != nil {
				b.log.Error("cannot undo a group change the store refused", "group", gs.Name, "err", err)
			}
			return nil, false, gw.err
		}
		return g, false, writeErr(writes...)
	}
	g, err := b.newGroup(gs)
	if err != nil {
		return nil, false, err
	}
	if start {
		if err := g.start(); err != nil {
			return nil, false, err
		}
	}
	g.mu.Lock()
	writes := g.syncStaticLocked()
	g.mu.Unlock()
	g.flushWrites()
	err = writeErr(writes...)
	if err == nil {
		g.mu.Lock()
		w := g.queueWriteLocked(&storeWrite{putGroup: &gs, groupRev: rev})
		g.mu.Unlock()
		g.flushWrites()
		err = w.err
	}
	if err != nil {
		b.discardNew(g)
		return nil, false, err
	}
	b.mu.Lock()
	b.groups[gs.Name] = g
	b.mu.Unlock()
	b.groupEvent("group-created", gs.Name)
	b.log.Info("group created", "group", gs.Name, "front_door", gs.FrontDoor, "binding", gs.Binding, "strategy", gs.Strategy)
	return g, true, nil
}

// discardNew undoes a group that could not be created: it stops it and
// forgets the static replicas syncStaticLocked stored for it.
func (b *Balancer) discardNew(g *group) {
	_ = g.stop(context.Background())
	g.mu.Lock()
	b.certMetrics.Remove(g.tls)
	for _, m := range append([]*member(nil), g.order...) {
		g.removeMemberLocked(m)
		b.forgetToken(m)
		g.deleteReplicaLocked(m.rec.ID)
	}
	g.mu.Unlock()
	g.flushWrites() // errors are logged
}

// PatchGroup changes strategy, params or binding at run time. Params are
// merged into the current ones; switching strategy resets params to the new
// strategy's defaults unless given.
func (b *Balancer) PatchGroup(name string, p protocol.GroupPatch) (protocol.GroupStatus, error) {
	return b.PatchGroupIf(name, p, Match{})
}

// PatchGroupIf is PatchGroup if the group's revision satisfies m, and
// fails with a *RevisionError otherwise (revision.go).
func (b *Balancer) PatchGroupIf(name string, p protocol.GroupPatch, m Match) (protocol.GroupStatus, error) {
	if _, err := b.group(name); err != nil { // created at another instance a moment ago?
		return protocol.GroupStatus{}, err
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	g, err := b.localGroup(name)
	if err != nil {
		return protocol.GroupStatus{}, err
	}
	g.mu.Lock()
	gs := g.spec
	g.mu.Unlock()
	params := map[string]any{}
	if p.Strategy != nil && *p.Strategy != gs.Strategy {
		gs.Strategy = *p.Strategy
	} else {
		for k, v := range gs.Params {
			params[k] = v
		}
	}
	for k, v := range p.Params {
		params[k] = v
	}
	gs.Params = params
	if p.Binding != nil {
		gs.Binding = *p.Binding
		if !registry.IsReplicated(gs) {
			gs.Replicated = protocol.Replicated{} // the block goes with the binding
		}
	}
	if p.MaxInflight != nil {
		gs.MaxInflight = *p.MaxInflight
	}
	if p.Queue != nil {
		gs.Queue = *p.Queue
	}
	gs = registry.WithDefaults(gs)
	if err := registry.Validate(gs); err != nil {
		return protocol.GroupStatus{}, err
	}
	warning := ""
	if gs.Source == protocol.SourceConfig && !b.opts.SharedConfig {
		warning = "group " + name + " is declared in the config file; this change will be reverted at the next start or reload"
		b.log.Warn("run-time change to a config-declared group", "group", name)
	}
	if _, _, err := b.putGroupLocked(gs, true, m); err != nil {
		return protocol.GroupStatus{}, err
	}
	st := g.status()
	st.Warning = warning
	return st, nil
}

// DeleteGroup stops a group's front door and forgets it and its replicas.
func (b *Balancer) DeleteGroup(name string) error {
	return b.DeleteGroupIf(name, Match{})
}

// DeleteGroupIf is DeleteGroup if the group's revision satisfies m, and
// fails with a *RevisionError otherwise (revision.go).
func (b *Balancer) DeleteGroupIf(name string, m Match) error {
	if _, err := b.group(name); err != nil { // created at another instance a moment ago?
		return err
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	b.mu.RLock()
	g := b.groups[name]
	b.mu.RUnlock()
	if g != nil && g.fromConfig.Load() && !b.opts.SharedConfig {
		b.log.Warn("deleted a config-declared group; it comes back at the next start or reload", "group", name)
	}
	return b.deleteGroupLocked(name, m)
}

func (b *Balancer) deleteGroup(name string) error {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	return b.deleteGroupLocked(name, Match{})
}

// deleteGroupLocked deletes group name if its revision satisfies m. With a
// revision in m, the store's deletion of the record is conditioned on it;
// without, the group is deleted whatever its revision. Caller holds
// b.adminMu.
func (b *Balancer) deleteGroupLocked(name string, m Match) error {
	if _, err := b.localGroup(name); err != nil {
		return err
	}
	if err := b.StoreUnreachable(); err != nil {
		return err // degraded.go
	}
	cur, err := b.reg.GroupRevision(name)
	if err != nil {
		return err
	}
	if !m.holds(cur) {
		return &RevisionError{Group: name, Match: m, Current: cur}
	}
	g := b.detachGroup(name)
	if g == nil {
		return fmt.Errorf("%w %q", ErrUnknownGroup, name)
	}
	g.mu.Lock()
	w := &storeWrite{delGroup: true, groupRev: -1}
	if m.Rev != 0 {
		w.groupRev = m.Rev
	}
	g.queueWriteLocked(w)
	g.mu.Unlock()
	g.flushWrites()
	// A conflict here means another instance wrote the record between the
	// check above and this write: the group is stopped here, and that
	// instance's record stays in the store.
	var ce *groupstore.ConflictError
	if errors.As(w.err, &ce) {
		return &RevisionError{Group: name, Match: m, Current: ce.Current}
	}
	if w.err != nil {
		b.askResync() // the group comes back if its record is still stored (degraded.go)
	}
	return writeErr(w)
}

// detachGroup takes group name out of the balancer (its tokens too),
// stops it within 5 s and takes its certificates out of the metrics; nil
// when there is no such group.
func (b *Balancer) detachGroup(name string) *group {
	b.mu.Lock()
	g := b.groups[name]
	if g == nil {
		b.mu.Unlock()
		return nil
	}
	delete(b.groups, name)
	b.groupEvent("group-deleted", name)
	for h, m := range b.tokens {
		if m.g == g {
			delete(b.tokens, h)
		}
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.stop(ctx)
	g.mu.Lock()
	b.certMetrics.Remove(g.tls)
	g.mu.Unlock()
	return g
}

// listenFor opens the front door listener of group name: the one a
// reload bound for it beforehand (reload.go), if any, else a new one.
func (b *Balancer) listenFor(name, addr string) (net.Listener, error) {
	if ln := b.takePrebound(name, addr); ln != nil {
		return ln, nil
	}
	ln, err := b.opts.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFrontDoor, err)
	}
	return ln, nil
}

// sameSettings compares two groups' settings in their JSON form (so that
// YAML's 1 and JSON's 1.0 are equal).
func sameSettings(a, b protocol.Group) bool {
	a.Source, b.Source = "", ""
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// goAsync runs f in the background, counted in b.async, unless the
// balancer is shutting down (then f does not run, and false is returned).
// Safe to call from any goroutine, concurrently with Shutdown.
func (b *Balancer) goAsync(f func()) bool {
	b.asyncMu.Lock()
	defer b.asyncMu.Unlock()
	if b.ctx.Err() != nil {
		return false
	}
	b.async.Go(f)
	return true
}
