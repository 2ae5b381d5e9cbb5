package balancer_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// logOpener opens groups' logs in one boltlog file, as serve does on a
// single node, and records what it opened and what was closed.
type logOpener struct {
	db *boltlog.DB

	mu     sync.Mutex
	opened []string // "group limits ttl", in order
	open   map[string]int
	last   map[string]replog.Log // the last log opened of each group
}

func newLogOpener(t *testing.T) *logOpener {
	t.Helper()
	db, err := boltlog.Open(filepath.Join(t.TempDir(), boltlog.FileName), boltlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &logOpener{db: db, open: map[string]int{}, last: map[string]replog.Log{}}
}

func (o *logOpener) Open(group string, lim replog.Limits, ttl time.Duration) (replog.Log, error) {
	l, err := o.db.Group(group, boltlog.GroupOptions{Limits: lim, SessionTTL: ttl})
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened = append(o.opened, group+" "+protocol.ByteSize(lim.MaxPayload).String()+" "+protocol.ByteSize(lim.MaxLogBytes).String()+" "+ttl.String())
	o.open[group]++
	o.last[group] = l
	return &closeCounted{Log: l, o: o, group: group}, nil
}

// openLogs returns what was opened, and how many logs of group are open.
func (o *logOpener) state(group string) ([]string, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.opened), o.open[group]
}

type closeCounted struct {
	replog.Log
	o     *logOpener
	group string
	once  sync.Once
}

func (c *closeCounted) Close() error {
	c.once.Do(func() {
		c.o.mu.Lock()
		c.o.open[c.group]--
		c.o.mu.Unlock()
	})
	return c.Log.Close()
}

func replicatedSpec(name string, r protocol.Replicated) protocol.Group {
	return protocol.Group{Name: name, FrontDoor: "127.0.0.1:0", Binding: protocol.BindingReplicated, Replicated: r}
}

// A replicated group has a hub while it runs, over a log opened with its
// settings; a change of them reopens the log, leaving the binding or
// deleting the group closes it.
func TestReplicatedGroupHub(t *testing.T) {
	t.Parallel()
	logs := newLogOpener(t)
	e := newEnv(t, envOptions{replicatedLog: logs.Open, instance: "solo"})
	e.mustPutGroup(replicatedSpec("counter", protocol.Replicated{}))
	e.mustPutGroup(protocol.Group{Name: "plain", Binding: protocol.PerRequest})

	h1, ok := e.b.Hub("counter")
	if !ok || h1 == nil {
		t.Fatal("Hub(counter): none for a running replicated group")
	}
	for _, name := range []string{"plain", "nope"} {
		if _, ok := e.b.Hub(name); ok {
			t.Errorf("Hub(%s): a hub, want none", name)
		}
	}
	if opened, n := logs.state("counter"); !slices.Equal(opened, []string{"counter 1MiB 256MiB 10m0s"}) || n != 1 {
		t.Fatalf("logs opened %q (%d open), want one with the defaults", opened, n)
	}

	// A new replicated block: a new hub over a log reopened with it.
	e.mustPutGroup(replicatedSpec("counter", protocol.Replicated{MaxPayload: 64 << 10, SessionTTL: protocol.Duration(time.Minute)}))
	h2, ok := e.b.Hub("counter")
	if !ok || h2 == h1 {
		t.Fatalf("Hub(counter) after a change of the replicated block: %p (ok %v), want a new one (old %p)", h2, ok, h1)
	}
	if opened, n := logs.state("counter"); !slices.Equal(opened, []string{"counter 1MiB 256MiB 10m0s", "counter 64KiB 256MiB 1m0s"}) || n != 1 {
		t.Fatalf("logs opened %q (%d open), want the second with the new settings and one open", opened, n)
	}
	if r := e.b.SnapshotReplicated("counter"); r.MaxPayload != 64<<10 || r.SessionTTL.D() != time.Minute {
		t.Errorf("the snapshot's replicated block %+v, want the new settings", r)
	}
	// A change elsewhere keeps the hub.
	g := replicatedSpec("counter", protocol.Replicated{MaxPayload: 64 << 10, SessionTTL: protocol.Duration(time.Minute)})
	g.Strategy = "round-robin"
	e.mustPutGroup(g)
	if h, _ := e.b.Hub("counter"); h != h2 {
		t.Errorf("Hub(counter) changed with the strategy")
	}

	// Off replicated: no hub, the log closed.
	e.mustPutGroup(protocol.Group{Name: "counter", Binding: protocol.OnDemand})
	if _, ok := e.b.Hub("counter"); ok {
		t.Error("Hub(counter) after binding on-demand: still a hub")
	}
	if _, n := logs.state("counter"); n != 0 {
		t.Errorf("%d logs of counter open after it left binding replicated, want 0", n)
	}

	// Back, then deleted: the log closed.
	e.mustPutGroup(replicatedSpec("counter", protocol.Replicated{}))
	if _, ok := e.b.Hub("counter"); !ok {
		t.Fatal("Hub(counter): none after binding replicated again")
	}
	if err := e.b.DeleteGroup("counter"); err != nil {
		t.Fatal(err)
	}
	if _, n := logs.state("counter"); n != 0 {
		t.Errorf("%d logs of counter open after its deletion, want 0", n)
	}
}

// Without a log to open, a replicated group does not start, and says why.
func TestReplicatedGroupWithoutLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	_, _, err := e.b.PutGroup(replicatedSpec("counter", protocol.Replicated{}))
	if !errors.Is(err, balancer.ErrNoReplicatedLog) || !strings.Contains(err.Error(), "group counter") {
		t.Fatalf("PutGroup of a replicated group without a log: %v, want ErrNoReplicatedLog naming the group", err)
	}
}

// The hub's live replicas are the active members; a token is known as
// the replica of its own group only.
func TestReplicatedLiveAndTokens(t *testing.T) {
	t.Parallel()
	logs := newLogOpener(t)
	e := newEnv(t, envOptions{replicatedLog: logs.Open})
	e.mustPutGroup(replicatedSpec("counter", protocol.Replicated{}))
	e.mustPutGroup(replicatedSpec("other", protocol.Replicated{}))
	a := e.mustRegister("counter", "http://127.0.0.1:9101")
	b := e.mustRegister("counter", "http://127.0.0.1:9102")
	o := e.mustRegister("other", "http://127.0.0.1:9103")

	want := []replhub.Peer{{ID: a.ID, Address: "http://127.0.0.1:9101"}, {ID: b.ID, Address: "http://127.0.0.1:9102"}}
	if got := e.b.LivePeers("counter"); !slices.Equal(got, want) {
		t.Fatalf("live peers %v, want %v", got, want)
	}
	if err := e.b.Drain("counter", a.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.b.LivePeers("counter"); !slices.Equal(got, want[1:]) {
		t.Errorf("live peers after draining %s: %v, want %v", a.ID, got, want[1:])
	}

	for _, tc := range []struct {
		group, token, want string
	}{
		{"counter", a.Token, a.ID},
		{"counter", b.Token, b.ID},
		{"other", o.Token, o.ID},
		{"counter", o.Token, ""},
		{"other", a.Token, ""},
		{"counter", "not-a-token", ""},
		{"counter", "", ""},
		{"nope", a.Token, ""},
	} {
		id, ok := e.b.ReplicaOf(tc.group, tc.token)
		if id != tc.want || ok != (tc.want != "") {
			t.Errorf("ReplicaOf(%s, %.8s…) = %q, %v; want %q", tc.group, tc.token, id, ok, tc.want)
		}
	}
}

// A divergent reply: counted, an event, and with a majority the replica
// leaves the group and its address is blocked; with two replicas, an
// alert only.
func TestReplicatedDivergence(t *testing.T) {
	t.Parallel()
	logs := newLogOpener(t)
	e := newEnv(t, envOptions{replicatedLog: logs.Open})
	e.mustPutGroup(replicatedSpec("counter", protocol.Replicated{}))
	a := e.mustRegister("counter", "http://127.0.0.1:9101")
	b := e.mustRegister("counter", "http://127.0.0.1:9102")
	events := e.subscribe("counter")

	divergence := func(ev balancer.Event) error {
		if ev.Type != "divergence" {
			return errors.New("not a divergence")
		}
		return nil
	}
	e.b.Diverged("counter", replhub.Divergence{Group: "counter", Position: 7, Replica: b.ID, Want: "200 aa", Got: "200 bb"})
	ev := waitEvent(t, events, 5*time.Second, divergence)
	if d, _ := ev.Data.(map[string]any); d["replica"] != b.ID || d["ejected"] != false || d["position"] != uint64(7) {
		t.Errorf("divergence event %v, want replica %s at 7, not ejected", ev.Data, b.ID)
	}
	if got := e.b.LivePeers("counter"); len(got) != 2 {
		t.Errorf("an alert removed a replica: live %v", got)
	}

	e.b.Diverged("counter", replhub.Divergence{Group: "counter", Position: 9, Replica: a.ID, Ejected: true, Want: "200 aa", Got: "500 cc"})
	waitEvent(t, events, 5*time.Second, divergence)
	eventually(t, 5*time.Second, func() error {
		if got := e.b.LivePeers("counter"); len(got) != 1 || got[0].ID != b.ID {
			return errors.New("the ejected replica is still live")
		}
		return nil
	})
	var blocked *balancer.BlockedError
	if _, _, err := e.b.Register("counter", protocol.Registration{Address: "http://127.0.0.1:9101"}); !errors.As(err, &blocked) {
		t.Errorf("the ejected replica registers again: %v, want a *BlockedError", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.b.ReplicatedMetrics())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "fulcrum_replicated_divergent_replies_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["group"]+"/"+labels["replica"]] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{"counter/" + a.ID: 1, "counter/" + b.ID: 1}; !maps.Equal(got, want) {
		t.Errorf("fulcrum_replicated_divergent_replies_total %v, want %v", got, want)
	}
}

// In a cluster, a retried request whose reply the hub does not have asks
// the other instances too: each gets the position and where to post the
// reply, with the admin token.
func TestReplicatedAskPeers(t *testing.T) {
	t.Parallel()
	asked := make(chan protocol.ReplyRequest, 4)
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req protocol.ReplyRequest
		if r.Method != http.MethodPost || r.URL.Path != "/v1/groups/counter/log/ask" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
		asked <- req
	}))
	defer peer.Close()
	logs := newLogOpener(t)
	e := newEnv(t, envOptions{replicatedLog: logs.Open, instance: "fa", peerAdminURLs: func() []string { return []string{peer.URL} }})
	e.mustPutGroup(replicatedSpec("counter", protocol.Replicated{}))
	e.mustRegister("counter", "http://127.0.0.1:9101")
	hub, ok := e.b.Hub("counter")
	if !ok {
		t.Fatal("no hub")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &protocol.OrderedRequest{Kind: protocol.KindHTTP, Method: "POST", Target: "/increment"}
	// A new call is appended and waits for its reply: nobody is asked.
	go func() { _, _ = hub.Order(ctx, replhub.Call{Session: "c", Seq: 2, Request: req}) }()
	// A call appended before (as through another instance) whose reply
	// this hub does not have: the peers are asked.
	logs.mu.Lock()
	l := logs.last["counter"]
	logs.mu.Unlock()
	pos, _, err := l.AppendOrGet(ctx, replog.Append{Session: "c", Seq: 1, Payload: []byte(`{"kind":"http"}`), Origin: "fb"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = hub.Order(ctx, replhub.Call{Session: "c", Seq: 1, Request: req}) }()
	select {
	case r := <-asked:
		if r.Position != pos || r.ReplyTo != "http://admin.invalid" {
			t.Errorf("reply request %+v, want position %d posted to this instance's admin URL", r, pos)
		}
	case <-ctx.Done():
		t.Fatal("the peer was not asked")
	}
}

// PATCH of the binding in and out of replicated: the block's defaults
// come with it and go with it.
func TestReplicatedPatchBinding(t *testing.T) {
	t.Parallel()
	logs := newLogOpener(t)
	e := newEnv(t, envOptions{replicatedLog: logs.Open})
	e.mustPutGroup(protocol.Group{Name: "counter", Binding: protocol.OnDemand})
	repl, plain := protocol.BindingReplicated, protocol.PerRequest
	st, err := e.b.PatchGroup("counter", protocol.GroupPatch{Binding: &repl})
	if err != nil {
		t.Fatalf("PATCH binding replicated: %v", err)
	}
	if _, ok := e.b.Hub("counter"); !ok || st.Binding != repl {
		t.Fatalf("after PATCH binding replicated: binding %q, hub %v", st.Binding, ok)
	}
	if r := e.b.SnapshotReplicated("counter"); r.MaxPayload != 1<<20 {
		t.Errorf("replicated block %+v, want the defaults", r)
	}
	if _, err := e.b.PatchGroup("counter", protocol.GroupPatch{Binding: &plain}); err != nil {
		t.Fatalf("PATCH binding per-request: %v", err)
	}
	if _, ok := e.b.Hub("counter"); ok {
		t.Error("a hub after PATCH binding per-request")
	}
	if r := e.b.SnapshotReplicated("counter"); r.MaxPayload != 0 || r.SessionTTL != 0 {
		t.Errorf("replicated block %+v after leaving binding replicated, want none", r)
	}
}
