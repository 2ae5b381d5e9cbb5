package leader

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Elector runs this instance's side of every group's election on etcd:
// one session (a lease of Options.SessionTTL kept alive) for the instance,
// a campaign per joined group on it, and a watch of every group's
// election keys. When the session ends (its lease expired: the instance
// was frozen or cut off from etcd longer than the TTL) every group it led
// is deposed at once, the lost lease is revoked as soon as etcd answers,
// and a new session campaigns again. Safe for concurrent use.
type Elector struct {
	opts  Options
	cli   *clientv3.Client
	root  string // <prefix>leaders/
	pause time.Duration

	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	workers sync.WaitGroup
	flushed chan struct{} // closed when the dispatcher has delivered its last change

	mu     sync.Mutex
	closed bool
	sess   *concurrency.Session // nil while the instance has none
	groups map[string]*group
	table  *table
	queue  []Change
	queued chan struct{} // a change was queued; capacity 1
	done   chan struct{} // closed at Close, after the workers ended
}

// group is one joined group. Guarded by Elector.mu.
type group struct {
	core   *Core
	cancel context.CancelFunc // ends its campaign on the current session; nil when none
	el     *concurrency.Election
	fence  Fence // valid while core is Leader
}

// New starts an Elector: it creates the instance's session in the
// background (retrying while etcd is unreachable) and watches every
// group's leader. Join adds the groups to campaign for.
func New(opts Options) (*Elector, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Elector{
		opts:    opts,
		cli:     opts.Client,
		root:    opts.Prefix + "leaders/",
		pause:   opts.SessionTTL / 4,
		groups:  map[string]*group{},
		queued:  make(chan struct{}, 1),
		done:    make(chan struct{}),
		flushed: make(chan struct{}),
	}
	e.table = newTable(e.root)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.workers.Add(2)
	go e.sessions()
	go e.observe()
	go e.dispatch()
	return e, nil
}

// ElectionPrefix is the etcd prefix of group's election: its candidates'
// keys are <prefix>leaders/<group>/<lease id in hex>.
func (e *Elector) ElectionPrefix(group string) string { return e.root + group + "/" }

// Join makes the instance campaign for group, whose reports come every
// interval (> 0); joining a group again only updates its interval.
func (e *Elector) Join(name string, interval time.Duration) error {
	if err := checkGroup(name); err != nil {
		return err
	}
	if interval <= 0 {
		return fmt.Errorf("leader: group %q: report interval %v: must be positive", name, interval)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("leader: closed")
	}
	if g, ok := e.groups[name]; ok {
		g.core.SetInterval(interval)
		return nil
	}
	g := &group{core: NewCore(name, e.opts.Instance, interval)}
	g.core.Observe(e.table.leader(name, 0))
	e.groups[name] = g
	if e.sess != nil {
		e.campaignLocked(name, g, e.sess)
	}
	return nil
}

// Leave stops campaigning for group and resigns if the instance leads it
// (bounded by ctx); leaving a group not joined does nothing.
func (e *Elector) Leave(ctx context.Context, name string) error {
	e.mu.Lock()
	g, ok := e.groups[name]
	if !ok {
		e.mu.Unlock()
		return nil
	}
	delete(e.groups, name)
	el := e.resignLocked(g)
	e.mu.Unlock()
	e.opts.Metrics.Forget(name)
	if el != nil {
		if err := el.Resign(ctx); err != nil {
			return fmt.Errorf("leader: group %q: resign: %w", name, err)
		}
	}
	return nil
}

// resignLocked ends g's campaign and makes its core a Follower; it returns
// the election to resign when g led. Caller must hold e.mu.
func (e *Elector) resignLocked(g *group) *concurrency.Election {
	if g.cancel != nil {
		g.cancel() // a campaign still waiting deletes its own key
		g.cancel = nil
	}
	var el *concurrency.Election
	if g.core.State() == Leader {
		el = g.el
	}
	g.el = nil
	if ch, ok := g.core.Resign(); ok {
		e.queueLocked(ch)
	}
	return el
}

// Status is one group's leadership as this instance sees it.
type Status struct {
	State State
	// Term is this instance's term while Leader (last term when Deposed).
	Term int64
	// Leader and LeaderTerm: the group's leader as known here ("", 0:
	// none, between leaders).
	Leader     string
	LeaderTerm int64
	// CanPlan: the instance leads and is warm.
	CanPlan bool
}

// Status returns group's status; ok is false for a group not joined.
func (e *Elector) Status(name string) (st Status, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.groups[name]
	if !ok {
		return Status{}, false
	}
	st = Status{State: g.core.State(), Term: g.core.Term(), CanPlan: g.core.CanPlan(e.opts.Clock.Now())}
	st.Leader, st.LeaderTerm = g.core.Leader()
	return st, true
}

// Leaders returns the leader of every group that has one, as instance
// names: the joined groups as their cores know them, and any other group
// whose election keys the watch has seen.
func (e *Elector) Leaders() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for name := range e.table.groups {
		if o := e.table.leader(name, 0); o.Instance != "" {
			out[name] = o.Instance
		}
	}
	for name, g := range e.groups {
		if inst, _ := g.core.Leader(); inst != "" {
			out[name] = inst
		} else {
			delete(out, name)
		}
	}
	return out
}

// Report records that a load report of group arrived now (warm-up).
func (e *Elector) Report(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if g, ok := e.groups[name]; ok {
		g.core.Report(e.opts.Clock.Now())
	}
}

// CanPlan tells whether the instance may plan moves for group now.
func (e *Elector) CanPlan(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.groups[name]
	return ok && g.core.CanPlan(e.opts.Clock.Now())
}

// Fence returns the fence of the instance's term in group; ok is false
// when it does not lead the group. Writes through the fence apply only
// while the term lasts, even if the instance has not noticed its loss.
func (e *Elector) Fence(name string) (f Fence, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.groups[name]
	if !ok || g.core.State() != Leader {
		return Fence{}, false
	}
	return g.fence, true
}

// Close resigns every group the instance leads, revokes its session's
// lease (removing its candidates' keys), and stops; ctx bounds the calls
// to etcd. Changes are all delivered to OnChange when it returns. Closing
// twice does nothing.
func (e *Elector) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var els []*concurrency.Election
	for _, g := range e.groups {
		if el := e.resignLocked(g); el != nil {
			els = append(els, el)
		}
	}
	sess := e.sess
	e.mu.Unlock()
	var errs []error
	for _, el := range els {
		if err := el.Resign(ctx); err != nil {
			errs = append(errs, fmt.Errorf("leader: resign %s: %w", el.Key(), err))
		}
	}
	e.cancel()
	e.workers.Wait()
	if sess != nil {
		if _, err := e.cli.Revoke(ctx, sess.Lease()); err != nil {
			errs = append(errs, fmt.Errorf("leader: revoke lease %x: %w", sess.Lease(), err))
		}
	}
	close(e.done)
	<-e.flushed
	return errors.Join(errs...)
}

// queueLocked queues ch for OnChange and counts it. Caller must hold e.mu.
func (e *Elector) queueLocked(ch Change) {
	e.opts.Metrics.Record(ch)
	e.opts.Logger.Info("leader: "+ch.String(), "instance", e.opts.Instance)
	if e.opts.OnChange == nil {
		return
	}
	e.queue = append(e.queue, ch)
	select {
	case e.queued <- struct{}{}:
	default:
	}
}

// dispatch delivers queued changes to OnChange in order, until Close.
func (e *Elector) dispatch() {
	defer close(e.flushed)
	for {
		e.mu.Lock()
		q := e.queue
		e.queue = nil
		e.mu.Unlock()
		for _, ch := range q {
			e.opts.OnChange(ch)
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-e.queued:
		case <-e.done:
			e.mu.Lock()
			q := e.queue
			e.queue = nil
			e.mu.Unlock()
			for _, ch := range q {
				e.opts.OnChange(ch)
			}
			return
		}
	}
}

// wait waits d, or until ctx ends (false).
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sessions keeps the instance's session: it creates one, campaigns for
// every joined group on it, and when its lease is lost deposes the
// groups, revokes the lease once etcd answers and starts over.
func (e *Elector) sessions() {
	defer e.workers.Done()
	var lost clientv3.LeaseID // a lost lease not yet revoked
	for {
		s, err := e.newSession()
		if err != nil {
			return // closing
		}
		if lost != clientv3.NoLease {
			// etcd answers again: the lost lease's keys go now rather
			// than a TTL after etcd's return (lease not found: it
			// expired meanwhile).
			e.revoke(lost)
			lost = clientv3.NoLease
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			s.Orphan() // Close revokes nothing it did not see; the lease expires
			return
		}
		e.sess = s
		for name, g := range e.groups {
			e.campaignLocked(name, g, s)
		}
		e.mu.Unlock()
		select {
		case <-s.Done():
		case <-e.ctx.Done():
			return
		}
		e.mu.Lock()
		e.sess = nil
		for _, g := range e.groups {
			if g.cancel != nil {
				g.cancel()
				g.cancel = nil
			}
			g.el = nil
			if ch, ok := g.core.SessionLost(); ok {
				e.queueLocked(ch)
			}
		}
		e.mu.Unlock()
		e.opts.Logger.Warn("leader: session lost; its lease is revoked when etcd answers", "instance", e.opts.Instance, "lease", fmt.Sprintf("%x", s.Lease()))
		// Revoke the lost lease, so that its keys (and the fences on
		// them) go at once rather than a TTL after etcd is back; if etcd
		// does not answer now, once the next session is granted.
		if !e.revoke(s.Lease()) {
			lost = s.Lease()
		}
	}
}

// revoke revokes a lease, bounded by the TTL; it tells whether etcd
// answered (a lease already gone counts).
func (e *Elector) revoke(id clientv3.LeaseID) bool {
	ctx, cancel := context.WithTimeout(e.ctx, e.opts.SessionTTL)
	defer cancel()
	_, err := e.cli.Revoke(ctx, id)
	return err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound)
}

// newSession grants a lease (each attempt bounded by the TTL, so that an
// unreachable etcd is retried rather than waited on) and keeps it alive
// until e.ctx ends.
func (e *Elector) newSession() (*concurrency.Session, error) {
	ttl := int(e.opts.SessionTTL / time.Second)
	for {
		gctx, cancel := context.WithTimeout(e.ctx, e.opts.SessionTTL)
		resp, err := e.cli.Grant(gctx, int64(ttl))
		cancel()
		if err == nil {
			s, serr := concurrency.NewSession(e.cli, concurrency.WithLease(resp.ID), concurrency.WithTTL(ttl), concurrency.WithContext(e.ctx))
			if serr == nil {
				return s, nil
			}
			err = serr
		}
		if e.ctx.Err() != nil {
			return nil, e.ctx.Err()
		}
		e.opts.Logger.Warn("leader: no session yet", "instance", e.opts.Instance, "err", err)
		if !wait(e.ctx, e.pause) {
			return nil, e.ctx.Err()
		}
	}
}

// campaignLocked starts g's campaign on session s. Caller must hold e.mu.
func (e *Elector) campaignLocked(name string, g *group, s *concurrency.Session) {
	if g.cancel != nil {
		g.cancel()
	}
	ctx, cancel := context.WithCancel(s.Ctx())
	g.cancel = cancel
	if ch, ok := g.core.Campaign(); ok {
		e.queueLocked(ch)
	}
	e.workers.Add(1)
	go e.campaign(ctx, name, g, s)
}

// campaign campaigns until elected or ctx ends (the session ended, the
// group was left, or another campaign replaced it).
func (e *Elector) campaign(ctx context.Context, name string, g *group, s *concurrency.Session) {
	defer e.workers.Done()
	el := concurrency.NewElection(s, e.root+name)
	for {
		err := el.Campaign(ctx, e.opts.Instance)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		e.opts.Logger.Warn("leader: campaign failed; trying again", "group", name, "err", err)
		if !wait(ctx, e.pause) {
			return
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// A campaign does not notice a lost session: its result counts only
	// if the session is still the instance's and alive.
	if ctx.Err() != nil || e.groups[name] != g || e.sess != s {
		return
	}
	select {
	case <-s.Done():
		return
	default:
	}
	ch, err := g.core.Elected(el.Rev(), e.opts.Clock.Now())
	if err != nil {
		e.opts.Logger.Warn("leader: stale election result ignored", "group", name, "err", err)
		return
	}
	g.el = el
	g.fence = Fence{Group: name, Key: el.Key(), Term: el.Rev()}
	e.queueLocked(ch)
}

// observe keeps e.table: it lists the election keys, then watches them,
// and lists again whenever the watch breaks.
func (e *Elector) observe() {
	defer e.workers.Done()
	for e.ctx.Err() == nil {
		rev, err := e.list()
		if err == nil {
			err = e.watch(rev)
		}
		if e.ctx.Err() != nil {
			return
		}
		e.opts.Logger.Debug("leader: watch of the elections broke; listing again", "err", err)
		if !wait(e.ctx, e.pause) {
			return
		}
	}
}

func (e *Elector) list() (int64, error) {
	ctx, cancel := context.WithTimeout(e.ctx, e.opts.SessionTTL)
	defer cancel()
	resp, err := e.cli.Get(ctx, e.root, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	t := newTable(e.root)
	for _, kv := range resp.Kvs {
		t.put(string(kv.Key), string(kv.Value), kv.CreateRevision)
	}
	rev := resp.Header.Revision
	e.mu.Lock()
	defer e.mu.Unlock()
	e.table = t
	for name, g := range e.groups {
		e.observedLocked(name, g, t.leader(name, rev))
	}
	return rev, nil
}

func (e *Elector) watch(from int64) error {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(e.ctx))
	defer cancel()
	for wr := range e.cli.Watch(ctx, e.root, clientv3.WithPrefix(), clientv3.WithRev(from+1)) {
		if err := wr.Err(); err != nil {
			return err
		}
		e.mu.Lock()
		touched := map[string]int64{} // group → revision of its last event
		for _, ev := range wr.Events {
			var name string
			var ok bool
			if ev.Type == mvccpb.DELETE {
				name, ok = e.table.del(string(ev.Kv.Key))
			} else {
				name, ok = e.table.put(string(ev.Kv.Key), string(ev.Kv.Value), ev.Kv.CreateRevision)
			}
			if ok {
				touched[name] = ev.Kv.ModRevision
			}
		}
		for _, name := range slices.Sorted(maps.Keys(touched)) {
			if g, ok := e.groups[name]; ok {
				e.observedLocked(name, g, e.table.leader(name, touched[name]))
			}
		}
		e.mu.Unlock()
	}
	return errors.New("leader: watch of the elections ended")
}

// observedLocked feeds an observation to g's core; a leader it deposes
// campaigns again on the current session. Caller must hold e.mu.
func (e *Elector) observedLocked(name string, g *group, o Observed) {
	ch, ok := g.core.Observe(o)
	if !ok {
		return
	}
	e.queueLocked(ch)
	g.el = nil
	if ch.To == Deposed && e.sess != nil && !e.closed {
		e.campaignLocked(name, g, e.sess)
	}
}
