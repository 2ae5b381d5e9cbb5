package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
)

var shared *etcdtest.Cluster

func TestMain(m *testing.M) { etcdtest.Main(m, &shared) }

var roots atomic.Int64

// newRoot is a deployment root of the test's own.
func newRoot(t testing.TB) string {
	return fmt.Sprintf("/affinity-%d-%s/kv/", roots.Add(1), strings.ReplaceAll(t.Name(), "/", "-"))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// newStore is a store of group "g" under root, on a client of its own
// (another instance's).
func newStore(t testing.TB, root string, o Options) *Store {
	t.Helper()
	etcdtest.Need(t)
	if o.Client == nil {
		o.Client = newClient(t, shared.Endpoints())
	}
	o.Root, o.Group = root, "g"
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTwoStoresShareEntries: an entry one instance puts is read by
// another, which renews it; its key is in the group's layout, on a lease
// of the rule's timeout rounded up; a deletion by either is seen by both.
func TestTwoStoresShareEntries(t *testing.T) {
	root := newRoot(t)
	a := newStore(t, root, Options{})
	b := newStore(t, root, Options{})
	ctx := ctxT(t)
	if err := a.Put(ctx, 1, "/objects/x y", "r-aa", 4500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	rep, ok, err := b.Get(ctx, 1, "/objects/x y")
	if err != nil || !ok || rep != "r-aa" {
		t.Fatalf("b.Get = %q, %v, %v; want r-aa from a's put", rep, ok, err)
	}
	if _, ok, err := b.Get(ctx, 0, "/objects/x y"); err != nil || ok {
		t.Fatalf("b.Get of another rule = %v, %v; want absent", ok, err)
	}
	if err := b.Renew(ctx, 1, "/objects/x y"); err != nil {
		t.Fatalf("b.Renew of a's entry: %v", err)
	}
	resp, err := a.opts.Client.Get(ctx, root+groupstore.AffinityKey("g", 1, "/objects/x y"))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("entry key: %v, %v; want one key on a lease", resp, err)
	}
	if k := string(resp.Kvs[0].Key); k != root+"affinity/g/1/%2Fobjects%2Fx%20y" {
		t.Errorf("entry key %q, want under affinity/g/1/ with the object key escaped", k)
	}
	ttl, err := a.opts.Client.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil || ttl.GrantedTTL != 5 {
		t.Errorf("lease granted %d s (%v), want 5 (4.5 s rounded up)", ttl.GrantedTTL, err)
	}
	if err := b.Delete(ctx, 1, "/objects/x y"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.Get(ctx, 1, "/objects/x y"); err != nil || ok {
		t.Fatalf("a.Get after b.Delete = %v, %v; want absent", ok, err)
	}
	if err := a.Renew(ctx, 1, "/objects/x y"); err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatalf("a.Renew after delete: %v, want nil (not due) or ErrNotFound", err)
	}
	if err := b.Renew(ctx, 1, "/objects/x y"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b.Renew after delete: %v, want ErrNotFound", err)
	}
}

// TestEntryExpiresUnrenewed: an entry no instance renews is deleted by
// etcd when its lease (2 s, the least) runs out; another instance then
// finds nothing, and a renewal says so.
func TestEntryExpiresUnrenewed(t *testing.T) {
	root := newRoot(t)
	a := newStore(t, root, Options{})
	b := newStore(t, root, Options{})
	ctx := ctxT(t)
	key := root + groupstore.AffinityKey("g", 0, "10.0.0.1")
	start, err := a.opts.Client.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	wch := a.opts.Client.Watch(ctx, key, clientv3.WithRev(start.Header.Revision+1))
	if err := a.Put(ctx, 0, "10.0.0.1", "r-01", time.Second); err != nil {
		t.Fatal(err)
	}
	deleted := false
	for wr := range wch {
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				deleted = true
			}
		}
		if deleted {
			break
		}
	}
	if !deleted {
		t.Fatalf("the entry was not deleted by its lease within the test's deadline: %v", ctx.Err())
	}
	if _, ok, err := b.Get(ctx, 0, "10.0.0.1"); err != nil || ok {
		t.Fatalf("b.Get after expiry = %v, %v; want absent", ok, err)
	}
	if err := b.Renew(ctx, 0, "10.0.0.1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b.Renew after expiry: %v, want ErrNotFound", err)
	}
}

// TestRenewThrottled: within a third of the timeout of its last renewal
// an instance's Renew makes no request (shown by revoking the lease
// behind its back: the renewal still succeeds, having asked nothing); at
// a third it asks etcd, and learns the entry is gone.
func TestRenewThrottled(t *testing.T) {
	root := newRoot(t)
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := newStore(t, root, Options{Clock: clk})
	ctx := ctxT(t)
	if err := a.Put(ctx, 0, "k", "r-01", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	resp, err := a.opts.Client.Get(ctx, root+groupstore.AffinityKey("g", 0, "k"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("entry: %v, %v", resp, err)
	}
	if _, err := a.opts.Client.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(9 * time.Second)
	for i := range 3 {
		if err := a.Renew(ctx, 0, "k"); err != nil {
			t.Fatalf("renewal %d at 9 s, under a third of 30 s: %v, want nil without a request", i, err)
		}
	}
	clk.Advance(time.Second)
	if err := a.Renew(ctx, 0, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("renewal at 10 s: %v, want a request finding the lease gone (ErrNotFound)", err)
	}
}

// TestMemberLost: on a three-member etcd, losing one member changes
// nothing; losing a second (no quorum) makes every operation fail within
// the request timeout with an error naming etcd and the entry, and the
// store works again when the member is back.
func TestMemberLost(t *testing.T) {
	etcdtest.Need(t)
	c := etcdtest.New(t, etcdtest.Options{Members: 3})
	const timeout = 500 * time.Millisecond
	s := newStore(t, newRoot(t), Options{Client: newClient(t, c.Endpoints()), RequestTimeout: timeout})
	ctx := ctxT(t)
	if err := s.Put(ctx, 0, "a", "r-01", time.Minute); err != nil {
		t.Fatal(err)
	}
	c.Member(0).Kill()
	// The client moves to a live member: allow it a few attempts.
	var err error
	for range 10 {
		if err = s.Put(ctx, 0, "b", "r-02", time.Minute); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("put with one member of three lost: %v", err)
	}
	if rep, ok, err := s.Get(ctx, 0, "a"); err != nil || !ok || rep != "r-01" {
		t.Fatalf("get with one member lost = %q, %v, %v", rep, ok, err)
	}
	c.Member(1).Kill()
	s.leases = map[entryID]*leaseInfo{} // so that Renew asks etcd
	ops := map[string]func() error{
		"put":    func() error { return s.Put(ctx, 0, "c", "r-03", time.Minute) },
		"get":    func() error { _, _, err := s.Get(ctx, 0, "a"); return err },
		"renew":  func() error { return s.Renew(ctx, 0, "a") },
		"delete": func() error { return s.Delete(ctx, 0, "a") },
	}
	for name, op := range ops {
		start := time.Now()
		err := op()
		took := time.Since(start)
		if err == nil {
			t.Errorf("%s without quorum succeeded", name)
			continue
		}
		if !strings.Contains(err.Error(), "affinity: etcd at ") || !strings.Contains(err.Error(), "group g rule 0") {
			t.Errorf("%s without quorum: error %q does not name etcd and the entry", name, err)
		}
		// Put is two requests (grant, put) in one bound.
		if took > timeout+time.Second {
			t.Errorf("%s without quorum took %v, want within the request timeout %v (and scheduling)", name, took, timeout)
		}
	}
	if err := c.Member(1).Start(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := c.Member(1).WaitHealthy(wctx); err != nil {
		t.Fatal(err)
	}
	for {
		_, _, err = s.Get(ctx, 0, "a")
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("get after quorum is back: %v", err)
	}
}
