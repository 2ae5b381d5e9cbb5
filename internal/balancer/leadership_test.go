package balancer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/moves"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The cluster tests run several balancers in this process on one real
// etcd member, each with its own etcd store, leader.Elector and admin API
// on a real socket, as fulcrum serve wires them (internal/cli/serve_leader.go).

const (
	clusterToken    = "cluster-admin-token"
	clusterGroup    = "prime"
	clusterInterval = 100 * time.Millisecond
	clusterTTL      = 2 * time.Second
)

// pinnedFence is the node's Elector, whose Fence can be pinned to a
// term it held once: the node then believes it still leads, as a frozen
// leader does when it wakes.
type pinnedFence struct {
	*leader.Elector
	pin atomic.Pointer[leader.Fence]
}

func (p *pinnedFence) Fence(group string) (leader.Fence, bool) {
	if f := p.pin.Load(); f != nil {
		return *f, true
	}
	return p.Elector.Fence(group)
}

type clusterNode struct {
	name, url string
	st        *etcdstore.Store
	el        *leader.Elector
	fence     *pinnedFence
	moves     *moves.Store
	b         *balancer.Balancer
	srv       *http.Server
	served    chan struct{}
	stopOnce  sync.Once
}

type testCluster struct {
	t      *testing.T
	etcd   *etcdtest.Cluster
	prefix string

	mu    sync.Mutex
	urls  map[string]string
	nodes []*clusterNode
	// peerClient, when set, gives each instance its Options.PeerClient.
	peerClient func(name string) *http.Client
}

var clusterPrefixes atomic.Int64

func newTestCluster(t *testing.T, etcd *etcdtest.Cluster) *testCluster {
	return &testCluster{t: t, etcd: etcd, prefix: fmt.Sprintf("/balancertest-%d/", clusterPrefixes.Add(1)), urls: map[string]string{}}
}

func (c *testCluster) peerURL(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.urls[name]
	return u, ok
}

func (c *testCluster) peers(self string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name, u := range c.urls {
		if name != self {
			out = append(out, u)
		}
	}
	return out
}

// start runs an instance named name.
func (c *testCluster) start(name string) *clusterNode {
	t := c.t
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &clusterNode{name: name, url: "http://" + ln.Addr().String(), served: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.st, err = etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.etcd.Endpoints(), Prefix: c.prefix})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	var bp atomic.Pointer[balancer.Balancer]
	n.el, err = leader.New(leader.Options{Client: n.st.Client(), Prefix: n.st.Prefix(), Instance: name, SessionTTL: clusterTTL, Logger: log,
		OnChange: func(ch leader.Change) {
			if b := bp.Load(); b != nil {
				b.LeadershipChanged(ch.Group)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if n.moves, err = moves.New(moves.Options{Client: n.st.Client(), Prefix: n.st.Prefix()}); err != nil {
		t.Fatal(err)
	}
	n.fence = &pinnedFence{Elector: n.el}
	n.b, err = balancer.New(balancer.Options{
		Moves: n.moves,
		Store: n.st, Logger: log, Instance: name, SharedConfig: true, Follow: true, AdminURL: n.url, AdminAddr: ln.Addr().String(),
		Leadership: n.fence, PeerURL: c.peerURL, PeerAdminURLs: func() []string { return c.peers(name) },
		PeerToken: func() string { return clusterToken }, PeerClient: c.peerClientOf(name),
	})
	if err != nil {
		t.Fatal(err)
	}
	bp.Store(n.b)
	if err := n.b.Start(); err != nil {
		t.Fatal(err)
	}
	n.srv = &http.Server{Handler: api.New(n.b, api.Options{AdminToken: clusterToken, Logger: log})}
	go func() {
		defer close(n.served)
		_ = n.srv.Serve(ln)
	}()
	c.mu.Lock()
	c.urls[name] = n.url
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	t.Cleanup(n.stop)
	return n
}

// peerClientOf is the PeerClient of instance name (nil: the default).
func (c *testCluster) peerClientOf(name string) *http.Client {
	if c.peerClient == nil {
		return nil
	}
	return c.peerClient(name)
}

// stop shuts the instance down as serve does: API, balancer (which
// resigns), election, store.
func (n *clusterNode) stop() {
	n.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.srv.Shutdown(ctx)
		<-n.served
		_ = n.b.Shutdown(ctx)
		_ = n.el.Close(ctx)
		_ = n.st.Close()
	})
}

// until waits, up to d, for cond to hold, checking it every 20ms.
func until(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %v", what, d)
		case <-tick.C:
		}
	}
}

// leaderNode waits until every node agrees on one leader of the group
// with a term above after, that leader alone in state Leader, and returns
// it with its term.
func (c *testCluster) leaderNode(after int64) (*clusterNode, int64) {
	c.t.Helper()
	var lead *clusterNode
	var term int64
	until(c.t, 4*clusterTTL, "one leader agreed on by every instance", func() bool {
		lead, term = nil, 0
		c.mu.Lock()
		nodes := append([]*clusterNode(nil), c.nodes...)
		c.mu.Unlock()
		var name string
		for _, n := range nodes {
			st, ok := n.el.Status(clusterGroup)
			if !ok || st.Leader == "" || st.LeaderTerm <= after || (name != "" && st.Leader != name) {
				return false
			}
			name, term = st.Leader, st.LeaderTerm
			if st.State == leader.Leader {
				if lead != nil || st.Term != term {
					return false
				}
				lead = n
			}
		}
		return lead != nil && lead.name == name
	})
	return lead, term
}

// report POSTs a report to an instance's /v1/report without following
// redirects.
func report(t *testing.T, base, token string, load float64) (int, http.Header, []byte) {
	t.Helper()
	return reportJSON(t, base, token, fmt.Sprintf(`{"load": %g}`, load))
}

// reportJSON POSTs a report body to an instance's /v1/report without
// following redirects.
func reportJSON(t *testing.T, base, token, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/report", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 5 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, answer
}

// postAdmin POSTs a JSON body to an admin route with the admin token.
func postAdmin(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+clusterToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// revokeLeader ends the leading instance's session as etcd would if it
// had died: its lease is revoked behind its back (no resignation).
func (c *testCluster) revokeLeader(lead *clusterNode) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cli := lead.st.Client()
	resp, err := cli.Get(ctx, lead.el.ElectionPrefix(clusterGroup), clientv3.WithPrefix())
	if err != nil {
		c.t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if string(kv.Value) != lead.name {
			continue
		}
		key := string(kv.Key)
		id, err := strconv.ParseInt(key[strings.LastIndex(key, "/")+1:], 16, 64)
		if err != nil {
			c.t.Fatalf("election key %s: %v", key, err)
		}
		if _, err := cli.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	c.t.Fatalf("no election key of %s under %s", lead.name, lead.el.ElectionPrefix(clusterGroup))
}

// TestClusterLeadership runs three balancers on one etcd: one leads the
// group, takes its reports and advises with its term; the others send
// reports to it (307) and pick from the loads it pushes; when its lease
// is lost another leads with a higher term, and the old one's fenced
// writes change nothing.
func TestClusterLeadership(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	c := newTestCluster(t, etcd)
	nodes := []*clusterNode{c.start("fulcrum-a"), c.start("fulcrum-b"), c.start("fulcrum-c")}
	_, _, err := nodes[0].b.PutGroup(protocol.Group{Name: clusterGroup, FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(clusterInterval)})
	if err != nil {
		t.Fatal(err)
	}
	lead, term := c.leaderNode(0)
	if term <= 0 {
		t.Fatalf("leader %s has term %d, want > 0", lead.name, term)
	}
	var others []*clusterNode
	for _, n := range nodes {
		if n != lead {
			others = append(others, n)
		}
	}

	// A replica registered at one follower; a report at the other
	// follower, which may not have heard of it yet, is looked up in
	// etcd and sent to the leader, never refused.
	reg, _, err := others[0].b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:9/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range others {
		code, hdr, body := report(t, n.url, reg.Token, 1)
		if code != http.StatusTemporaryRedirect || hdr.Get("Location") != lead.url+"/v1/report" {
			t.Fatalf("report at %s (not the leader): %d Location %q %s; want 307 to %s/v1/report", n.name, code, hdr.Get("Location"), body, lead.url)
		}
	}

	// A follower that does not know the leader's admin URL answers 503
	// no_leader, with Retry-After: the monitor tries elsewhere.
	c.mu.Lock()
	delete(c.urls, lead.name)
	c.mu.Unlock()
	code, hdr, body := report(t, others[0].url, reg.Token, 1)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "1" || !strings.Contains(string(body), `"code":"no_leader"`) {
		t.Fatalf("report at %s, the leader's URL unknown: %d Retry-After %q %s; want 503 no_leader with Retry-After 1", others[0].name, code, hdr.Get("Retry-After"), body)
	}
	c.mu.Lock()
	c.urls[lead.name] = lead.url
	c.mu.Unlock()

	// Only the leader answers, with its term.
	const load = 7
	code, _, body = report(t, lead.url, reg.Token, load)
	if code != http.StatusOK {
		t.Fatalf("report at the leader %s: %d %s", lead.name, code, body)
	}
	var adv protocol.Advisory
	if err := json.Unmarshal(body, &adv); err != nil {
		t.Fatal(err)
	}
	if adv.Term != uint64(term) {
		t.Fatalf("the leader's advisory %+v has term %d, want its term %d", adv, adv.Term, term)
	}

	// The leader's loads reach the followers' snapshots.
	for _, n := range others {
		until(t, 5*time.Second, "the load view pushed to "+n.name, func() bool {
			report(t, lead.url, reg.Token, load) // keep it fresh
			pl := n.b.PickLoads(clusterGroup)[reg.ID]
			return pl.Reported && pl.Load == load
		})
	}
	// The followers plan nothing and advise nothing of their own; their
	// status shows the leader's loads.
	for _, n := range others {
		gs, err := n.b.Group(clusterGroup)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range gs.Replicas {
			if r.Advisory != protocol.Nominal || r.Shed != 0 {
				t.Errorf("follower %s shows replica %s advised %s (shed %v): it took no report, so it must advise nothing", n.name, r.ID, r.Advisory, r.Shed)
			}
			if r.EffectiveLoad == nil || *r.EffectiveLoad != load || r.Load == nil || *r.Load != load || r.ReportAgeMS == nil {
				t.Errorf("follower %s shows replica %s with load %v, effective %v, age %v; want the leader's %d", n.name, r.ID, r.Load, r.EffectiveLoad, r.ReportAgeMS, load)
			}
		}
	}

	// Bad pushes are refused precisely; a stale term is not applied.
	code, body = postAdmin(t, others[0].url+balancer.LoadsPath, protocol.LoadView{Group: clusterGroup, Term: uint64(term), Leader: lead.name,
		Replicas: []protocol.ReplicaLoad{{ID: reg.ID, Reported: true, Load: -1}}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), `"field":"replicas[0].load"`) {
		t.Errorf("push of a negative load: %d %s; want 400 naming replicas[0].load", code, body)
	}
	code, body = postAdmin(t, others[0].url+balancer.LoadsPath, map[string]any{"group": clusterGroup, "leader": lead.name, "replicas": []any{}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), `"field":"term"`) {
		t.Errorf("push without a term: %d %s; want 400 naming term", code, body)
	}
	code, body = postAdmin(t, others[0].url+balancer.LoadsPath, protocol.LoadView{Group: clusterGroup, Term: uint64(term) - 1, Leader: "fulcrum-old"})
	if code != http.StatusOK || !strings.Contains(string(body), `"applied":false`) {
		t.Errorf("push of a stale term: %d %s; want 200 applied false", code, body)
	}
	if pl := others[0].b.PickLoads(clusterGroup)[reg.ID]; !pl.Reported {
		t.Errorf("a stale push replaced the leader's view: %+v", pl)
	}

	// A monitor given a follower's admin URL follows its 307 to the
	// leader and gets the leader's advisories.
	mon, err := monitor.New(monitor.Options{Admin: others[1].url, Group: clusterGroup, Address: "http://127.0.0.1:10/", JoinToken: clusterToken,
		Interval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mon.Close(ctx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := mon.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	madv, err := mon.ReportNow(ctx)
	if err != nil || madv.Term != uint64(term) {
		t.Fatalf("the monitor's report through %s: %+v, %v; want the leader's advisory of term %d", others[1].name, madv, err, term)
	}

	// The leader's lease is lost: another leads, with a higher term.
	oldFence, ok := lead.el.Fence(clusterGroup)
	if !ok {
		t.Fatalf("the leader %s has no fence", lead.name)
	}
	c.revokeLeader(lead)
	next, nextTerm := c.leaderNode(term)
	if next == lead || nextTerm <= term {
		t.Fatalf("after %s's lease was revoked: leader %s term %d, want another instance with a term above %d", lead.name, next.name, nextTerm, term)
	}
	until(t, 5*time.Second, "the new leader's advisory", func() bool {
		code, _, body := report(t, next.url, reg.Token, load)
		return code == http.StatusOK && json.Unmarshal(body, &adv) == nil && adv.Term == uint64(nextTerm)
	})
	code, hdr, body = report(t, lead.url, reg.Token, load)
	if code != http.StatusTemporaryRedirect || hdr.Get("Location") != next.url+"/v1/report" {
		t.Fatalf("report at the deposed %s: %d Location %q %s; want 307 to %s/v1/report", lead.name, code, hdr.Get("Location"), body, next.url)
	}
	madv, err = mon.ReportNow(ctx)
	if err != nil || madv.Term != uint64(nextTerm) {
		t.Fatalf("the monitor after the new election: %+v, %v; want the advisory of term %d", madv, err, nextTerm)
	}

	// The deposed leader's writes change nothing: through its old fence
	// (etcd refuses it), and through the balancer (it leads no more).
	err = groupstore.New(oldFence.Store(lead.st)).DeleteReplica(clusterGroup, reg.ID)
	if !errors.Is(err, leader.ErrDeposed) {
		t.Fatalf("a write through the old term's fence: %v, want leader.ErrDeposed", err)
	}
	if err := lead.b.DeleteReplicaFenced(clusterGroup, reg.ID); !errors.Is(err, leader.ErrDeposed) {
		t.Fatalf("the deposed balancer's fenced write: %v, want leader.ErrDeposed", err)
	}
	// Even while it believes it still leads (its old term's fence), etcd
	// refuses the write.
	lead.fence.pin.Store(&oldFence)
	err = lead.b.DeleteReplicaFenced(clusterGroup, reg.ID)
	lead.fence.pin.Store(nil)
	if !errors.Is(err, leader.ErrDeposed) || !strings.Contains(err.Error(), "no longer of term") {
		t.Fatalf("the deposed balancer's write through its old fence: %v, want etcd's refusal (leader.ErrDeposed)", err)
	}
	gctx, gcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer gcancel()
	if _, err := lead.st.Get(gctx, groupstore.ReplicaKey(clusterGroup, reg.ID)); err != nil {
		t.Fatalf("the replica after the deposed leader's writes: %v, want it still stored", err)
	}
	// The new leader's fenced write applies.
	if err := next.b.DeleteReplicaFenced(clusterGroup, reg.ID); err != nil {
		t.Fatalf("the new leader's fenced write: %v", err)
	}
	if _, err := lead.st.Get(gctx, groupstore.ReplicaKey(clusterGroup, reg.ID)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the replica after the new leader's delete: %v, want it gone", err)
	}
}

// storedHealth reads replica id's health state from the store.
func storedHealth(t *testing.T, st store.Store, id string) (groupstore.Health, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := st.Get(ctx, groupstore.HealthKey(clusterGroup, id))
	if errors.Is(err, store.ErrNotFound) {
		return groupstore.Health{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var h groupstore.Health
	if err := json.Unmarshal(kv.Value, &h); err != nil {
		t.Fatal(err)
	}
	return h, true
}

// nodeReplicaState is replica id's state in an instance's status of the group
// ("" while the group has not reached that instance).
func nodeReplicaState(t *testing.T, n *clusterNode, id string) string {
	t.Helper()
	gs, err := n.b.Group(clusterGroup)
	if errors.Is(err, balancer.ErrUnknownGroup) {
		return "" // the group has not reached this instance's watch yet
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range gs.Replicas {
		if r.ID == id {
			return r.State
		}
	}
	return ""
}

// TestClusterHealth: only the leader probes; the up/down states its
// probes decide reach the other instance through the store, with its
// term; a new leader's probes take over from the stored state.
func TestClusterHealth(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	c := newTestCluster(t, etcd)
	nodes := []*clusterNode{c.start("fulcrum-a"), c.start("fulcrum-b")}
	var healthy atomic.Bool
	healthy.Store(true)
	var pullMu sync.Mutex
	var pullTerms []uint64 // the term of the advisory passed on each pull
	rsrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pull" {
			var adv protocol.Advisory
			if err := json.Unmarshal([]byte(r.Header.Get(protocol.HeaderAdvisory)), &adv); err != nil {
				t.Errorf("pull with advisory %q: %v", r.Header.Get(protocol.HeaderAdvisory), err)
			}
			pullMu.Lock()
			pullTerms = append(pullTerms, adv.Term)
			pullMu.Unlock()
			_, _ = io.WriteString(w, `{"load": 1}`)
			return
		}
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	pulledIn := func(term int64) (n int, others []uint64) {
		pullMu.Lock()
		defer pullMu.Unlock()
		for _, pt := range pullTerms {
			if pt == uint64(term) {
				n++
			} else {
				others = append(others, pt)
			}
		}
		return n, others
	}
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rdone := make(chan struct{})
	go func() {
		defer close(rdone)
		_ = rsrv.Serve(rln)
	}()
	defer func() {
		_ = rsrv.Close()
		<-rdone
	}()
	_, _, err = nodes[0].b.PutGroup(protocol.Group{Name: clusterGroup, FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(clusterInterval),
		Health: protocol.Health{Path: "/health", Interval: protocol.Duration(50 * time.Millisecond), Timeout: protocol.Duration(40 * time.Millisecond), Rise: 1, Fall: 1}})
	if err != nil {
		t.Fatal(err)
	}
	lead, term := c.leaderNode(0)
	other := nodes[0]
	if other == lead {
		other = nodes[1]
	}
	reg, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://" + rln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	until(t, 5*time.Second, "the replica active on both instances", func() bool {
		return nodeReplicaState(t, lead, reg.ID) == protocol.StateActive && nodeReplicaState(t, other, reg.ID) == protocol.StateActive
	})

	// A pulled replica: only the leader pulls, passing its advisory with
	// its term.
	if _, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:11/",
		Monitor: protocol.MonitorSpec{Mode: protocol.MonitorPull, URL: "http://" + rln.Addr().String() + "/pull"}}); err != nil {
		t.Fatal(err)
	}
	until(t, 5*time.Second, "three pulls", func() bool { n, _ := pulledIn(term); return n >= 3 })
	if _, others := pulledIn(term); len(others) > 0 {
		t.Fatalf("pulls passed advisories of terms %v, want only the leader's %d: only the leader pulls", others, term)
	}

	healthy.Store(false)
	until(t, 5*time.Second, "the leader's down reaching the other instance", func() bool {
		return nodeReplicaState(t, other, reg.ID) == protocol.StateDown
	})
	if h, ok := storedHealth(t, other.st, reg.ID); !ok || h.State != "down" || h.Term != term {
		t.Fatalf("stored health %+v (%v), want down in the leader's term %d", h, ok, term)
	}

	// The leader's lease is lost while the replica is down: the new
	// leader keeps it down, and its probes bring it up with its term.
	c.revokeLeader(lead)
	next, nextTerm := c.leaderNode(term)
	until(t, 5*time.Second, "a pull by the new leader", func() bool { n, _ := pulledIn(nextTerm); return n > 0 })
	if _, others := pulledIn(nextTerm); slices.Contains(others, 0) {
		t.Fatalf("pulls passed advisories of terms %v: an instance that did not lead pulled", others)
	}
	if state := nodeReplicaState(t, next, reg.ID); state != protocol.StateDown {
		t.Fatalf("the new leader %s shows the replica %s, want it still down", next.name, state)
	}
	healthy.Store(true)
	until(t, 5*time.Second, "the new leader's up reaching the store", func() bool {
		h, ok := storedHealth(t, next.st, reg.ID)
		return ok && h.State == "up" && h.Term == nextTerm
	})
	for _, n := range nodes {
		until(t, 5*time.Second, "the replica active again on "+n.name, func() bool {
			return nodeReplicaState(t, n, reg.ID) == protocol.StateActive
		})
	}

	// The replica's health state goes with it.
	if err := next.b.RemoveReplica(clusterGroup, reg.ID); err != nil {
		t.Fatal(err)
	}
	until(t, 5*time.Second, "the health state deleted with its replica", func() bool {
		_, ok := storedHealth(t, next.st, reg.ID)
		return !ok
	})
}

// TestClusterMoves: the leader commits the moves it plans to etcd before
// it advises the replica to send their clients back, and the other
// instance's front door finds them there.
func TestClusterMoves(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	c := newTestCluster(t, etcd)
	nodes := []*clusterNode{c.start("fulcrum-a"), c.start("fulcrum-b")}
	_, _, err := nodes[0].b.PutGroup(protocol.Group{Name: clusterGroup, FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(clusterInterval),
		Binding: protocol.OnDemand, Strategy: "least-loaded"})
	if err != nil {
		t.Fatal(err)
	}
	lead, term := c.leaderNode(0)
	other := nodes[0]
	if other == lead {
		other = nodes[1]
	}
	busy, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:9/"})
	if err != nil {
		t.Fatal(err)
	}
	idle, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:10/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var adv protocol.Advisory
	until(t, 10*time.Second, "a high advisory naming c2 from the warm leader", func() bool {
		if code, _, body := reportJSON(t, lead.url, idle.Token, `{"load": 10, "clients": [{"id": "c3", "rate": 10}]}`); code != http.StatusOK {
			t.Fatalf("report of the idle replica at the leader: %d %s", code, body)
		}
		code, _, body := reportJSON(t, lead.url, busy.Token, `{"load": 100, "clients": [{"id": "c1", "rate": 60}, {"id": "c2", "rate": 40}]}`)
		if code != http.StatusOK || json.Unmarshal(body, &adv) != nil {
			t.Fatalf("report of the busy replica at the leader: %d %s", code, body)
		}
		return adv.Advisory == protocol.High && len(adv.Clients) == 1 && adv.Clients[0] == "c2"
	})
	if adv.Term != uint64(term) {
		t.Errorf("the high advisory %+v, want the leader's term %d", adv, term)
	}
	// Committed before it was advised: there at once, for any reader.
	to, ok, err := other.moves.Lookup(ctx, clusterGroup, "c2")
	if err != nil || !ok || to != idle.ID {
		t.Fatalf("c2's move in etcd once advised: %q, %v, %v; want it to %s", to, ok, err, idle.ID)
	}
	if to, ok := other.b.LookupMove(clusterGroup, "c2"); !ok || to != idle.ID {
		t.Fatalf("the other instance's front door looks c2 up: %q, %v; want %s", to, ok, idle.ID)
	}
}
