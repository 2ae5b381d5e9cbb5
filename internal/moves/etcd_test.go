package moves_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/moves"
)

// shared is the package's one-member etcd, started by TestMain (nil when
// etcd is not installed: the tests then fail with CI=true, skip
// otherwise).
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { etcdtest.Main(m, &shared) }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var prefixes atomic.Int64

// newPrefix is a deployment prefix no other test uses.
func newPrefix(t *testing.T) string {
	return fmt.Sprintf("/moves-%d-%s/", prefixes.Add(1), strings.ReplaceAll(t.Name(), "/", "-"))
}

// client is a new etcd client of c, closed at cleanup.
func client(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	etcdtest.Need(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func newStore(t *testing.T, opts moves.Options) *moves.Store {
	t.Helper()
	s, err := moves.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// elect makes a real Elector on cli lead group under prefix and returns
// it with its fence.
func elect(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix, group string) (*leader.Elector, leader.Fence) {
	t.Helper()
	won := make(chan leader.Change, 100)
	e, err := leader.New(leader.Options{Client: cli, Prefix: prefix, Instance: "a", SessionTTL: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler), OnChange: func(ch leader.Change) {
			if ch.To == leader.Leader {
				won <- ch
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	if err := e.Join(group, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case <-won:
	case <-ctx.Done():
		t.Fatalf("not elected in %s: %v", group, ctx.Err())
	}
	f, ok := e.Fence(group)
	if !ok {
		t.Fatalf("elected in %s, but no fence", group)
	}
	return e, f
}

// get reads every move of group under prefix, by key.
func get(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix, group string) map[string]*mvccpb.KeyValue {
	t.Helper()
	resp, err := cli.Get(ctx, moves.GroupPrefix(prefix, group), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv
	}
	return out
}

var at = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// TestCommitLookup: moves committed by the leader are found by another
// instance's client, with the leader's term, on a lease; handing the same
// plan over again writes nothing; a completed move is gone.
func TestCommitLookup(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	cli := client(t, shared)
	prefix := newPrefix(t)
	_, fence := elect(ctx, t, cli, prefix, "prime")
	leaderStore := newStore(t, moves.Options{Client: cli, Prefix: prefix})
	plan := []moves.Move{
		{Client: "c1", To: "r2", Epoch: 3, PlannedAt: at},
		{Client: "odd/id with spaces%", To: "r3", Epoch: 3, PlannedAt: at},
		{Client: "c3", To: "r2", Epoch: 4, PlannedAt: at},
	}
	if err := leaderStore.Commit(ctx, fence, "prime", 2*time.Second, plan); err != nil {
		t.Fatal(err)
	}

	// A generous bound: this test is about what is found, not how fast
	// (TestLookupEtcdDown is), on a machine that may be busy.
	other := newStore(t, moves.Options{Client: client(t, shared), Prefix: prefix, LookupTimeout: 5 * time.Second})
	for _, m := range plan {
		to, ok, err := other.Lookup(ctx, "prime", m.Client)
		if err != nil || !ok || to != m.To {
			t.Errorf("Lookup(%q) = %q, %v, %v; want %q", m.Client, to, ok, err, m.To)
		}
	}
	if to, ok, err := other.Lookup(ctx, "prime", "nobody"); err != nil || ok {
		t.Errorf("Lookup of a client with no move = %q, %v, %v; want not found, no error", to, ok, err)
	}
	if to, ok, err := other.Lookup(ctx, "other", "c1"); err != nil || ok {
		t.Errorf("Lookup in another group = %q, %v, %v; want not found", to, ok, err)
	}

	kvs := get(ctx, t, cli, prefix, "prime")
	if len(kvs) != len(plan) {
		t.Fatalf("%d keys under %s, want %d", len(kvs), moves.GroupPrefix(prefix, "prime"), len(plan))
	}
	kv := kvs[moves.Key(prefix, "prime", "odd/id with spaces%")]
	if kv == nil {
		t.Fatalf("no key %s among %v", moves.Key(prefix, "prime", "odd/id with spaces%"), kvs)
	}
	if want := fmt.Sprintf(`{"to":"r3","term":%d,"epoch":3,"planned_at":"2026-11-27T09:00:00Z"}`, fence.Term); string(kv.Value) != want {
		t.Errorf("value %s, want %s", kv.Value, want)
	}
	if kv.Lease == 0 {
		t.Errorf("move key on no lease")
	}
	for k, kv2 := range kvs {
		if kv2.Lease != kv.Lease {
			t.Errorf("%s on lease %x, %s on %x: want one lease for the batch", k, kv2.Lease, kv.Key, kv.Lease)
		}
	}

	// The same plan again, and again with one move fewer: nothing written.
	if err := leaderStore.Commit(ctx, fence, "prime", 2*time.Second, plan); err != nil {
		t.Fatal(err)
	}
	if err := leaderStore.Commit(ctx, fence, "prime", 2*time.Second, plan[:2]); err != nil {
		t.Fatal(err)
	}
	for k, kv2 := range get(ctx, t, cli, prefix, "prime") {
		if kv2.ModRevision != kvs[k].ModRevision {
			t.Errorf("%s rewritten (revision %d, was %d) by a commit of the same plan", k, kv2.ModRevision, kvs[k].ModRevision)
		}
	}

	if err := leaderStore.Completed(ctx, fence, "prime", "c1"); err != nil {
		t.Fatal(err)
	}
	if to, ok, err := other.Lookup(ctx, "prime", "c1"); err != nil || ok {
		t.Errorf("Lookup after Completed = %q, %v, %v; want not found", to, ok, err)
	}
	if err := leaderStore.Completed(ctx, fence, "prime", "c1"); err != nil {
		t.Errorf("Completed twice: %v, want no error", err)
	}
}

// TestCommitSplits: a batch larger than etcd's --max-txn-ops goes in
// several fenced transactions of at most MovesPerTxn, all on one lease
// (etcd refuses a fenced transaction of 128 puts: "too many operations in
// txn request").
func TestCommitSplits(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	cli := client(t, shared)
	prefix := newPrefix(t)
	_, fence := elect(ctx, t, cli, prefix, "big")
	s := newStore(t, moves.Options{Client: cli, Prefix: prefix})
	plan := make([]moves.Move, 300)
	for i := range plan {
		plan[i] = moves.Move{Client: fmt.Sprintf("c%03d", i), To: fmt.Sprintf("r%d", i%4), PlannedAt: at}
	}
	if err := s.Commit(ctx, fence, "big", time.Second, plan); err != nil {
		t.Fatal(err)
	}
	kvs := get(ctx, t, cli, prefix, "big")
	if len(kvs) != len(plan) {
		t.Fatalf("%d keys, want %d", len(kvs), len(plan))
	}
	perRev := map[int64]int{}
	leases := map[int64]bool{}
	for _, kv := range kvs {
		perRev[kv.ModRevision]++
		leases[kv.Lease] = true
	}
	if len(perRev) != 3 || len(leases) != 1 {
		t.Errorf("%d transactions (keys per revision %v) on %d leases, want 3 (127+127+46) on 1", len(perRev), perRev, len(leases))
	}
	for rev, n := range perRev {
		if n > moves.MovesPerTxn {
			t.Errorf("revision %d wrote %d keys, more than %d", rev, n, moves.MovesPerTxn)
		}
	}
}

// TestDeposed: once the term is over, Commit and Completed write nothing
// and say why.
func TestDeposed(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	cli := client(t, shared)
	prefix := newPrefix(t)
	e, fence := elect(ctx, t, cli, prefix, "prime")
	s := newStore(t, moves.Options{Client: cli, Prefix: prefix})
	if err := s.Commit(ctx, fence, "prime", time.Second, []moves.Move{{Client: "kept", To: "r1", PlannedAt: at}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil { // resigns: the election key is deleted
		t.Fatal(err)
	}
	err := s.Commit(ctx, fence, "prime", time.Second, []moves.Move{{Client: "late", To: "r2", PlannedAt: at}})
	if !errors.Is(err, leader.ErrDeposed) || !strings.Contains(err.Error(), `moves: group "prime"`) {
		t.Fatalf("Commit by a deposed leader = %v, want an error wrapping leader.ErrDeposed naming the group", err)
	}
	err = s.Completed(ctx, fence, "prime", "kept")
	if !errors.Is(err, leader.ErrDeposed) {
		t.Fatalf("Completed by a deposed leader = %v, want leader.ErrDeposed", err)
	}
	kvs := get(ctx, t, cli, prefix, "prime")
	if len(kvs) != 1 || kvs[moves.Key(prefix, "prime", "kept")] == nil {
		t.Fatalf("moves after the deposed writes: %v, want only the one committed in office", kvs)
	}
}

// TestLeaseExpiry: a move's key expires with its lease, no sooner than
// its life after the commit.
func TestLeaseExpiry(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	cli := client(t, shared)
	prefix := newPrefix(t)
	_, fence := elect(ctx, t, cli, prefix, "prime")
	s := newStore(t, moves.Options{Client: cli, Prefix: prefix, LookupTimeout: 5 * time.Second})
	const life = time.Second // lease of 2 s
	key := moves.Key(prefix, "prime", "c1")
	start := time.Now()
	if err := s.Commit(ctx, fence, "prime", life, []moves.Move{{Client: "c1", To: "r2", PlannedAt: at}}); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get after commit: %v, %v", resp, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range cli.Watch(wctx, key, clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range wr.Events {
			if ev.Type != clientv3.EventTypeDelete {
				t.Fatalf("unexpected %v of %s", ev.Type, ev.Kv.Key)
			}
			took := time.Since(start)
			t.Logf("move of life %v gone %v after its commit", life, took.Round(time.Millisecond))
			if took < life {
				t.Errorf("key gone %v after commit, sooner than its life %v", took, life)
			}
			if _, ok, err := s.Lookup(ctx, "prime", "c1"); ok || err != nil {
				t.Errorf("Lookup after expiry: found %v, %v", ok, err)
			}
			return
		}
	}
	t.Fatalf("no delete of %s: %v", key, ctx.Err())
}

// TestLeaseShared: commits within a life of each other share a lease,
// across groups; a commit when less than a life is left of it gets a new
// one; a lease etcd no longer knows is replaced.
func TestLeaseShared(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	cli := client(t, shared)
	prefix := newPrefix(t)
	_, fa := elect(ctx, t, cli, prefix, "a")
	_, fb := elect(ctx, t, cli, prefix, "b")
	clk := clocktest.New(time.Now())
	s := newStore(t, moves.Options{Client: cli, Prefix: prefix, Clock: clk})
	const life = 10 * time.Second // lease of 20 s
	leaseOf := func(group, client string) int64 {
		t.Helper()
		kv := get(ctx, t, cli, prefix, group)[moves.Key(prefix, group, client)]
		if kv == nil {
			t.Fatalf("no move of %s in %s", client, group)
		}
		return kv.Lease
	}
	commit := func(f leader.Fence, group, client string) {
		t.Helper()
		if err := s.Commit(ctx, f, group, life, []moves.Move{{Client: client, To: "r1", PlannedAt: at}}); err != nil {
			t.Fatal(err)
		}
	}
	commit(fa, "a", "x")
	commit(fb, "b", "y")
	first := leaseOf("a", "x")
	if got := leaseOf("b", "y"); got != first {
		t.Errorf("second commit on lease %x, first on %x: want one lease", got, first)
	}
	clk.Advance(10*time.Second + time.Millisecond) // less than a life left
	commit(fa, "a", "z")
	second := leaseOf("a", "z")
	if second == first {
		t.Errorf("commit with less than a life left of the lease used it again")
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(second)); err != nil {
		t.Fatal(err)
	}
	commit(fb, "b", "w") // the cached lease is gone: a new one
	if got := leaseOf("b", "w"); got == second || got == 0 {
		t.Errorf("commit after the lease was revoked on lease %x (revoked: %x)", got, second)
	}
}

// TestLookupBadValue: a value that does not decode is not a move; the
// error names the key and the field.
func TestLookupBadValue(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	cli := client(t, shared)
	prefix := newPrefix(t)
	key := moves.Key(prefix, "prime", "c1")
	if _, err := cli.Put(ctx, key, `{"to":"r1","term":0}`); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, moves.Options{Client: cli, Prefix: prefix, LookupTimeout: 5 * time.Second})
	to, ok, err := s.Lookup(ctx, "prime", "c1")
	if ok || err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), `field "term"`) {
		t.Fatalf("Lookup of a bad value = %q, %v, %v; want not found and an error naming %s and the field", to, ok, err, key)
	}
}

// TestLookupEtcdDown: with its etcd member stopped, or frozen, Lookup
// gives up within its bound (100 ms) and says why.
func TestLookupEtcdDown(t *testing.T) {
	c := etcdtest.New(t, etcdtest.Options{})
	ctx := ctxFor(t, 30*time.Second)
	cli := client(t, c)
	prefix := newPrefix(t)
	s := newStore(t, moves.Options{Client: cli, Prefix: prefix}) // LookupTimeout's default
	up := newStore(t, moves.Options{Client: cli, Prefix: prefix, LookupTimeout: 5 * time.Second})
	if _, _, err := up.Lookup(ctx, "prime", "c1"); err != nil {
		t.Fatalf("Lookup with etcd up: %v", err)
	}
	lookup := func(what string) {
		t.Helper()
		start := time.Now()
		to, ok, err := s.Lookup(ctx, "prime", "c1")
		took := time.Since(start)
		t.Logf("Lookup with etcd %s: %v (%v)", what, took.Round(time.Millisecond), err)
		if ok || err == nil || !strings.Contains(err.Error(), "moves: look up the move of client") {
			t.Errorf("Lookup with etcd %s = %q, %v, %v; want not found and an error", what, to, ok, err)
		}
		if took >= time.Second {
			t.Errorf("Lookup with etcd %s took %v, want about %v (bound 1s)", what, took, moves.LookupTimeout)
		}
	}
	m := c.Member(0)
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	lookup("frozen (SIGSTOP)")
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
	m.Stop()
	lookup("stopped")
}

func TestNewRefuses(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:1"}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, tc := range []struct {
		name string
		opts moves.Options
		want string
	}{
		{"no client", moves.Options{}, "moves: client: none given, want an etcd client"},
		{"bad prefix", moves.Options{Client: cli, Prefix: "fulcrum"}, `moves: prefix "fulcrum": must start and end with /`},
		{"negative timeout", moves.Options{Client: cli, LookupTimeout: -time.Second}, "moves: lookup timeout -1s: must be positive"},
	} {
		if _, err := moves.New(tc.opts); err == nil || err.Error() != tc.want {
			t.Errorf("%s: New = %v, want %q", tc.name, err, tc.want)
		}
	}
}
