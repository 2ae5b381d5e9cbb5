package leader_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

func TestOptionErrors(t *testing.T) {
	t.Parallel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:1"}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, tc := range []struct {
		name string
		opts leader.Options
		want string
	}{
		{"no client", leader.Options{Instance: "a"}, "leader: client: none given"},
		{"no instance", leader.Options{Client: cli}, "leader: instance: empty"},
		{"prefix", leader.Options{Client: cli, Instance: "a", Prefix: "fulcrum"}, `leader: prefix "fulcrum": must start and end with /`},
		{"ttl 1s", leader.Options{Client: cli, Instance: "a", SessionTTL: time.Second}, "leader: session_ttl 1s: must be whole seconds, at least 2s"},
		{"ttl 2.5s", leader.Options{Client: cli, Instance: "a", SessionTTL: 2500 * time.Millisecond}, "leader: session_ttl 2.5s: must be whole seconds, at least 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := leader.New(tc.opts)
			if err == nil {
				e.Close(context.Background())
				t.Fatalf("New(%+v) = nil error, want %q", tc.opts, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

// changes collects an Elector's changes.
type changes chan leader.Change

func (c changes) await(ctx context.Context, t *testing.T, to leader.State) leader.Change {
	t.Helper()
	for {
		select {
		case ch := <-c:
			if ch.To == to {
				return ch
			}
		case <-ctx.Done():
			t.Fatalf("no change to %s: %v", to, ctx.Err())
		}
	}
}

type member struct {
	e       *leader.Elector
	changes changes
	metrics *leader.Metrics
	name    string
}

func newMember(t *testing.T, cli *clientv3.Client, prefix, name string, clk *clocktest.Manual) *member {
	t.Helper()
	m := &member{changes: make(changes, 100), metrics: leader.NewMetrics(), name: name}
	e, err := leader.New(leader.Options{Client: cli, Prefix: prefix, Instance: name, SessionTTL: 2 * time.Second,
		Clock: clk, Logger: slog.New(slog.DiscardHandler), Metrics: m.metrics, OnChange: func(ch leader.Change) { m.changes <- ch }})
	if err != nil {
		t.Fatal(err)
	}
	m.e = e
	t.Cleanup(func() { e.Close(context.Background()) })
	return m
}

// TestElector: two instances in one process on a real etcd member: one
// leads; only the leader, warm, plans; the leader's fence writes and a
// deposed one's is refused; both agree on the leader; resigning hands
// over to the other with a higher term; Close leaves no election key.
func TestElector(t *testing.T) {
	c := etcdtest.New(t, etcdtest.Options{})
	cli := client(t, c)
	ctx := ctxFor(t, 30*time.Second)
	clk := clocktest.New(t0)
	prefix := newPrefix()
	// The store first, as an instance opens it: it writes the schema of
	// an empty prefix.
	st, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.Endpoints(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x := newMember(t, cli, prefix, "x", clk)
	if err := x.e.Join("g", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	won := x.changes.await(ctx, t, leader.Leader)
	y := newMember(t, cli, prefix, "y", clk)
	if err := y.e.Join("g", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	y.changes.await(ctx, t, leader.Candidate)
	for _, m := range []*member{x, y} {
		proctest.Poll(ctx, t, m.name+" to see x lead g", func() (bool, string) {
			l := m.e.Leaders()
			st, _ := m.e.Status("g")
			return l["g"] == "x" && st.LeaderTerm == won.Term, fmt.Sprintf("leaders %v, status %+v", l, st)
		})
	}

	// Warm-up: two intervals from the first report in office.
	for _, m := range []*member{x, y} {
		m.e.Report("g")
	}
	clk.Advance(199 * time.Millisecond)
	if x.e.CanPlan("g") {
		t.Errorf("x plans 199ms after its first report, want not before 200ms")
	}
	clk.Advance(time.Millisecond)
	if !x.e.CanPlan("g") {
		t.Errorf("x does not plan 200ms after its first report")
	}
	if y.e.CanPlan("g") {
		t.Errorf("y, a candidate, plans")
	}
	if _, ok := y.e.Fence("g"); ok {
		t.Errorf("y, a candidate, has a fence")
	}

	f, ok := x.e.Fence("g")
	if !ok || f.Term != won.Term || !strings.HasPrefix(f.Key, x.e.ElectionPrefix("g")) {
		t.Fatalf("x's fence %+v %v, want term %d under %s", f, ok, won.Term, x.e.ElectionPrefix("g"))
	}
	key := prefix + "probe"
	resp, err := f.Txn(ctx, cli, nil, []clientv3.Op{clientv3.OpPut(key, "x")}, nil)
	if err != nil || !resp.Succeeded {
		t.Fatalf("x's fenced put: %v %+v", err, resp)
	}
	// Inner conditions run as asked: a failed one runs the else branch.
	resp, err = f.Txn(ctx, cli, []clientv3.Cmp{clientv3.Compare(clientv3.Value(key), "=", "other")},
		[]clientv3.Op{clientv3.OpPut(key, "not this")}, []clientv3.Op{clientv3.OpGet(key)})
	if err != nil || resp.Succeeded || string(resp.Responses[0].GetResponseRange().Kvs[0].Value) != "x" {
		t.Fatalf("fenced txn with a failing condition: %v %+v", err, resp)
	}

	// The same fence around the store's transactions.
	fenced := f.Store(st)
	if ok, _, _, err := fenced.Txn(ctx, nil, []store.Op{store.Put("moves/g", []byte("x"))}); err != nil || !ok {
		t.Fatalf("x's fenced store put: %v %v", ok, err)
	}
	if ok, _, kvs, err := fenced.Txn(ctx, []store.Cond{store.ValueIs("moves/g", []byte("other"))}, []store.Op{store.Put("moves/g", []byte("no"))}); err != nil || ok || string(kvs[0].Value) != "x" {
		t.Fatalf("x's fenced store txn with a failing condition: %v %v %+v", ok, err, kvs)
	}

	// x leaves: y takes over with a higher term; x's fence changes nothing.
	if err := x.e.Leave(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if ch := x.changes.await(ctx, t, leader.Follower); ch.Why != "resigned" || ch.Term != won.Term {
		t.Errorf("x's change on leaving: %v", ch)
	}
	next := y.changes.await(ctx, t, leader.Leader)
	if next.Term <= won.Term {
		t.Errorf("y's term %d, want above x's %d", next.Term, won.Term)
	}
	if _, err := f.Txn(ctx, cli, nil, []clientv3.Op{clientv3.OpPut(key, "stale")}, nil); !errors.Is(err, leader.ErrDeposed) {
		t.Errorf("x's old fence: %v, want ErrDeposed", err)
	}
	if _, _, _, err := fenced.Txn(ctx, nil, []store.Op{store.Put("moves/g", []byte("stale"))}); !errors.Is(err, leader.ErrDeposed) {
		t.Errorf("x's old fenced store: %v, want ErrDeposed", err)
	}
	if kv, err := st.Get(ctx, "moves/g"); err != nil || string(kv.Value) != "x" {
		t.Errorf("moves/g after the refused put: %q %v, want x", kv.Value, err)
	}
	if got, err := cli.Get(ctx, key); err != nil || string(got.Kvs[0].Value) != "x" {
		t.Errorf("probe after the refused put: %v %v", got, err)
	}
	if _, ok := y.e.Status("g"); !ok {
		t.Error("y lost its group")
	}
	if _, ok := x.e.Status("g"); ok {
		t.Error("x still has g after leaving it")
	}
	if n := count(t, x.metrics.Changes("g", leader.Leader)); n != 0 {
		t.Errorf("x's metrics after Leave: %v elected, want the group forgotten", n)
	}
	if n := count(t, y.metrics.Changes("g", leader.Leader)); n != 1 {
		t.Errorf("y's fulcrum_leadership_changes_total{to=leader} = %v, want 1", n)
	}

	// Close resigns and revokes: no election key is left.
	if err := y.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ch := y.changes.await(ctx, t, leader.Follower); ch.Why != "resigned" {
		t.Errorf("y's change on Close: %v", ch)
	}
	if err := x.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := cli.Get(ctx, prefix+"leaders/", clientv3.WithPrefix())
	if err != nil || len(got.Kvs) != 0 {
		t.Errorf("election keys after Close: %v %v", got.Kvs, err)
	}
}

func TestJoinErrors(t *testing.T) {
	t.Parallel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:1"}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	e, err := leader.New(leader.Options{Client: cli, Instance: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Close(ctx)
	}()
	for _, tc := range []struct {
		group    string
		interval time.Duration
		want     string
	}{
		{"", time.Second, `leader: group "": want a non-empty name without /`},
		{"a/b", time.Second, `leader: group "a/b": want a non-empty name without /`},
		{"g", 0, `leader: group "g": report interval 0s: must be positive`},
	} {
		if err := e.Join(tc.group, tc.interval); err == nil || err.Error() != tc.want {
			t.Errorf("Join(%q, %v) = %v, want %q", tc.group, tc.interval, err, tc.want)
		}
	}
}

// count reads a counter.
func count(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
