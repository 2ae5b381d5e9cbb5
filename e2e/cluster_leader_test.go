//go:build linux

package e2e

// Cluster tests of the analyzer leader in fulcrum serve: a leader killed
// or frozen under load, as a monitor given every instance's admin URL sees
// it (the terms its reports are answered with).

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// onDemandGroup is the demo's group: on-demand, least-loaded, reporting
// and rebalancing fast.
var onDemandGroup = map[string]any{"binding": "on-demand", "strategy": "least-loaded", "report_interval": "200ms"}

// leaderOf waits until instance i's GET /v1/cluster names a leader of
// group other than not, and returns its index among the instances.
func (c *fulcrumCluster) leaderOf(ctx context.Context, t *testing.T, i int, group, not string) int {
	t.Helper()
	idx := -1
	waitCluster(ctx, t, c.hc, c.instances[i].admin, fmt.Sprintf("a leader of %s (not %q)", group, not), func(view protocol.Cluster) bool {
		name := view.Leaders[group]
		for j, in := range c.instances {
			if in.name == name && name != not {
				idx = j
				return true
			}
		}
		return false
	})
	return idx
}

// termReplica is a prime replica in the test process whose monitor (given
// every instance's admin URL) reports every 50 ms besides its own reports,
// to see the term each report is answered with (the monitor keeps no
// nominal advisory's term): every term answered, in order, and how many
// answers it ignored as of an older term.
type termReplica struct {
	mon     *monitor.Monitor
	url     string
	ignored *ignoredTerms

	mu    sync.Mutex
	terms []uint64
	last  uint64
}

// startTermReplica starts a termReplica in group and samples the terms
// until the test ends.
func startTermReplica(ctx context.Context, t *testing.T, c *fulcrumCluster, group string) *termReplica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &termReplica{url: "http://" + ln.Addr().String(), ignored: &ignoredTerms{}}
	admins := c.admins()
	r.mon, err = monitor.New(monitor.Options{Admin: admins[0], Admins: admins[1:], Group: group, Address: r.url,
		JoinToken: clusterToken, Logger: slog.New(r.ignored)})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r.mon.Handler(backend.NewPrime(func() string { return r.url }))}
	go srv.Serve(ln)
	if err := r.mon.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.mon.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	sample, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if adv, err := r.mon.ReportNow(sample); err == nil {
				r.note(adv.Term)
			}
			select {
			case <-sample.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		stop()
		<-done
		closing, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.mon.Close(closing)
		srv.Shutdown(closing)
	})
	return r
}

func (r *termReplica) note(term uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = term
	if n := len(r.terms); n == 0 || r.terms[n-1] != term {
		r.terms = append(r.terms, term)
	}
}

// term is the term the last report was answered with.
func (r *termReplica) term() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// seen are the terms answered, in order.
func (r *termReplica) seen() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.terms)
}

// ignoredTerms is the monitor's log handler: it counts the advisories the
// monitor ignored as of an older term than it had seen.
type ignoredTerms struct{ n atomic.Int64 }

func (h *ignoredTerms) Enabled(context.Context, slog.Level) bool { return true }

func (h *ignoredTerms) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message == "ignoring an advisory of an older term" {
		h.n.Add(1)
	}
	return nil
}

func (h *ignoredTerms) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *ignoredTerms) WithGroup(string) slog.Handler      { return h }

// kill -9 of the analyzer leader of an on-demand group while Go clients
// (given all three front doors) call it: no call fails beyond those in
// flight at the leader's front door; a monitor gets an advisory with a
// higher term within 2 × session_ttl; and the group is balanced again
// (every replica serves a fair share of the calls).
func TestClusterLeaderKilledOnDemand(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 90*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
	c := startFulcrumCluster(t, etcd, "/e2e-leader-kill/", "")
	c.createGroup(ctx, t, 0, "demo", onDemandGroup)
	for range 2 {
		c.startBackend(t, "demo")
	}
	watcher := startTermReplica(ctx, t, c, "demo")
	leader := c.leaderOf(ctx, t, 0, "demo", "")
	proctest.Poll(ctx, t, "an advisory with the leader's term", func() (bool, string) { return watcher.term() > 0, fmt.Sprint(watcher.seen()) })
	oldTerm := watcher.term()

	doors := c.frontDoors(ctx, t, "demo")
	const clients = 8
	l := startClusterLoad(t, doors, clients, 25*time.Millisecond)
	proctest.Poll(ctx, t, "every client served 20 times", func() (bool, string) { return l.servedSince(make([]int64, clients), 20) })

	victim := c.instances[leader]
	l.watch.watchDoor(hostPort(doors[leader]))
	killed := time.Now()
	victim.kill9(ctx, t)
	inflight := l.watch.unwatch()
	proctest.Poll(ctx, t, "an advisory with a higher term", func() (bool, string) { return watcher.term() > oldTerm, fmt.Sprint(watcher.seen()) })
	took := time.Since(killed)
	t.Logf("kill -9 of leader %s: advisory with term %d (was %d) after %v", victim.name, watcher.term(), oldTerm, took)
	if took > 2*clusterSessionTTL {
		t.Errorf("the new term's advisory came %v after the kill, want within 2 × session_ttl (%v)", took, 2*clusterSessionTTL)
	}
	survivor := (leader + 1) % len(c.instances)
	if next := c.leaderOf(ctx, t, survivor, "demo", victim.name); next == leader {
		t.Errorf("the killed %s still leads", victim.name)
	}

	// Balanced again: over 200 calls, each of the three replicas serves
	// at least a fifth.
	before, window := l.servedBy(), l.oks()
	proctest.Poll(ctx, t, "the group balanced again", func() (bool, string) {
		if done, state := l.servedSince(window, 200/clients); !done {
			return false, state
		}
		after := l.servedBy()
		total, low := 0, 1<<30
		shares := map[string]int{}
		for k, v := range after {
			shares[k] = v - before[k]
			total += shares[k]
		}
		for _, v := range shares {
			low = min(low, v)
		}
		if len(shares) == 3 && low*5 >= total {
			return true, ""
		}
		before, window = after, l.oks() // not yet: another window
		return false, fmt.Sprintf("calls per replica %v", shares)
	})
	l.stop()
	failed := l.failures()
	t.Logf("%d calls in flight at %s's front door at the kill, %d failed: %v", inflight, victim.name, len(failed), failed)
	if len(failed) > inflight {
		t.Errorf("%d calls failed, more than the %d in flight at the killed leader's front door: %v", len(failed), inflight, failed)
	}
}

// The leader instance frozen with SIGSTOP for longer than session_ttl:
// another takes over within 2 × session_ttl; after SIGCONT none of the
// old leader's writes lands in etcd (nothing under the prefix's kv/
// changes after the thaw: the replica that died meanwhile was taken down
// by the new leader before it, so only a deposed leader's write could),
// and the monitor ignores any answer with the old leader's lower term.
func TestClusterLeaderFrozen(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 90*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
	const prefix = "/e2e-leader-frozen/"
	c := startFulcrumCluster(t, etcd, prefix, "")
	// Actively checked: the leader's probes decide up and down, and it
	// stores what they decide (health/ keys) through its fence.
	spec := maps.Clone(onDemandGroup)
	spec["health"] = map[string]any{"path": "/healthz", "interval": "100ms", "timeout": "50ms", "fall": 1, "rise": 1}
	c.createGroup(ctx, t, 0, "demo", spec)
	var backends []*proctest.Proc
	for range 2 {
		p, _ := c.startBackend(t, "demo")
		backends = append(backends, p)
	}
	watcher := startTermReplica(ctx, t, c, "demo")
	leader := c.leaderOf(ctx, t, 0, "demo", "")
	proctest.Poll(ctx, t, "an advisory with the leader's term", func() (bool, string) { return watcher.term() > 0, fmt.Sprint(watcher.seen()) })
	oldTerm := watcher.term()

	victim := c.instances[leader]
	survivor := (leader + 1) % len(c.instances)
	frozen := time.Now()
	victim.freeze(t)
	next := c.leaderOf(ctx, t, survivor, "demo", victim.name)
	took := time.Since(frozen)
	t.Logf("%s frozen; %s leads after %v", victim.name, c.instances[next].name, took)
	if took > 2*clusterSessionTTL {
		t.Errorf("a new leader after %v, want within 2 × session_ttl (%v)", took, 2*clusterSessionTTL)
	}
	proctest.Poll(ctx, t, "an advisory with the new term", func() (bool, string) { return watcher.term() > oldTerm, fmt.Sprint(watcher.seen()) })
	// A backend dies while the old leader is frozen: the new leader's
	// probes take it down and store that; the old leader, on waking, may
	// have a probe result of its own to write, which its fence must keep
	// out of etcd.
	backends[0].Kill9(ctx, t)
	waitGroup(ctx, t, c.hc, c.instances[survivor].admin, "demo", func(g groupStatus) error {
		for _, r := range g.Replicas {
			if r.State == protocol.StateDown {
				return nil
			}
		}
		return fmt.Errorf("no replica down at %s: %+v", c.instances[survivor].name, g.Replicas)
	})

	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: nil})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	at, err := cli.Get(ctx, prefix+"kv/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	thawed := at.Header.Revision
	victim.thaw(t)
	// The old leader notices its loss and steps down: the new one stays.
	waitCluster(ctx, t, c.hc, victim.admin, "the old leader awake and following "+c.instances[next].name, func(view protocol.Cluster) bool {
		return view.Leaders["demo"] == c.instances[next].name
	})
	// Two more session TTLs of the old leader awake; then nothing under
	// kv/ may have changed since the thaw: no key written after it, none
	// added or deleted.
	settle, cancel := context.WithTimeout(ctx, 2*clusterSessionTTL)
	<-settle.Done()
	cancel()
	// etcd's history of kv/ from the thaw to now: every put and delete,
	// read by a watch from the thaw's revision, complete once a progress
	// notice reaches the current revision.
	now, err := cli.Get(ctx, prefix+"meta/schema")
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	wch := cli.Watch(wctx, prefix+"kv/", clientv3.WithPrefix(), clientv3.WithRev(thawed+1), clientv3.WithProgressNotify())
	if err := cli.RequestProgress(wctx); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		resp, ok := <-wch
		if !ok {
			t.Fatalf("watch of kv/ from revision %d ended: %v", thawed+1, ctx.Err())
		}
		if err := resp.Err(); err != nil {
			t.Fatalf("watch of kv/ from revision %d: %v", thawed+1, err)
		}
		for _, ev := range resp.Events {
			t.Errorf("after the thaw (revision %d) etcd's history has %s %s at revision %d: %s", thawed, ev.Type, ev.Kv.Key, ev.Kv.ModRevision, ev.Kv.Value)
		}
		if resp.IsProgressNotify() && resp.Header.Revision >= now.Header.Revision {
			done = true
		} else if resp.IsProgressNotify() {
			if err := cli.RequestProgress(wctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("no change under kv/ in etcd's history from revision %d to %d (%d keys at the thaw)", thawed, now.Header.Revision, len(at.Kvs))
	// An answer with an older term than one seen before (the old leader
	// answering before it noticed its loss) is ignored by the monitor.
	seen, stale, highest := watcher.seen(), int64(0), uint64(0)
	for _, term := range seen {
		if term < highest {
			stale++
		}
		highest = max(highest, term)
	}
	if ignored := watcher.ignored.n.Load(); ignored < stale {
		t.Errorf("the monitor was answered with an older term %d times (terms answered: %v) and ignored %d of them", stale, seen, ignored)
	}
	t.Logf("terms answered: %v; %d stale answers, ignored", seen, stale)
}
