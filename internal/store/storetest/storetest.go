package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Harness is what the suite needs of an implementation.
type Harness struct {
	// Open returns a fresh, empty store. The suite closes it (Close must
	// tolerate a second call).
	Open func(t *testing.T) store.Store
	// Compact drops the store's history up to and including rev, as
	// etcd's Compact does. It may drop the history of every store the
	// harness opens (etcd compacts a whole cluster), so the suite runs the
	// test that compacts alone, before the others.
	Compact func(t *testing.T, s store.Store, rev int64)
	// SparseRevisions says that the store's revision is shared with
	// writers outside the store (an etcd cluster's revision counts the
	// changes of every prefix and client), so it may advance by more than
	// one between two of the suite's transactions, and a read or a
	// transaction that changes nothing may return a revision above the
	// last one the suite saw. The suite then checks that revisions
	// increase, that the changes of one transaction share one revision,
	// and that a transaction that changes nothing makes no revision of the
	// store's (by watching); otherwise (a store with no other writer, as
	// boltstore) it checks that revisions count the suite's transactions
	// exactly.
	SparseRevisions bool
}

// follows tells whether rev is the next revision after prev: exactly the
// next, or (sparse) any later one.
func (h Harness) follows(rev, prev int64) bool {
	if h.SparseRevisions {
		return rev > prev
	}
	return rev == prev+1
}

// unchanged tells whether rev, returned by a transaction that changed
// nothing, is still prev (or, sparse, not below it).
func (h Harness) unchanged(rev, prev int64) bool {
	if h.SparseRevisions {
		return rev >= prev
	}
	return rev == prev
}

// timeout bounds every wait of the suite.
const timeout = 10 * time.Second

// Run runs the suite, each test on its own store, in parallel.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store, Harness)
	}{
		{"GetPutDelete", testGetPutDelete},
		{"PutCopiesValue", testPutCopiesValue},
		{"ListPrefixOrder", testListPrefixOrder},
		{"Revisions", testRevisions},
		{"Conditions", testConditions},
		{"FailedTxnAppliesNothing", testFailedTxnAppliesNothing},
		{"DeletePrefix", testDeletePrefix},
		{"Limits", testLimits},
		{"BadTxns", testBadTxns},
		{"ConcurrentCAS", testConcurrentCAS},
		{"Watch", testWatch},
		{"WatchFromPast", testWatchFromPast},
		{"WatchEndsWithContext", testWatchEndsWithContext},
		{"Close", testClose},
	}
	// Alone: its compaction may reach the other tests' stores.
	t.Run("WatchCompacted", func(t *testing.T) {
		s := h.Open(t)
		t.Cleanup(func() { s.Close() })
		testWatchCompacted(t, s, h)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := h.Open(t)
			t.Cleanup(func() { s.Close() })
			tt.fn(t, s, h)
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// txn runs a transaction that must not fail with an error.
func txn(t *testing.T, s store.Store, conds []store.Cond, ops ...store.Op) (bool, int64, []store.KV) {
	t.Helper()
	ok, rev, kvs, err := s.Txn(ctxT(t), conds, ops)
	if err != nil {
		t.Fatalf("Txn(%v, %v): %v", conds, ops, err)
	}
	return ok, rev, kvs
}

// put puts key and returns the revision.
func put(t *testing.T, s store.Store, key, value string) int64 {
	t.Helper()
	_, rev, _ := txn(t, s, nil, store.Put(key, []byte(value)))
	return rev
}

func mustGet(t *testing.T, s store.Store, key string) store.KV {
	t.Helper()
	kv, err := s.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return kv
}

func absent(t *testing.T, s store.Store, key string) {
	t.Helper()
	if kv, err := s.Get(ctxT(t), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%q) = %+v, %v; want ErrNotFound", key, kv, err)
	}
}

func keys(kvs []store.KV) string {
	var ks []string
	for _, kv := range kvs {
		ks = append(ks, kv.Key)
	}
	return strings.Join(ks, " ")
}

func testGetPutDelete(t *testing.T, s store.Store, _ Harness) {
	absent(t, s, "groups/prime")
	r1 := put(t, s, "groups/prime", `{"name":"prime"}`)
	put(t, s, "groups/empty", "")
	if kv := mustGet(t, s, "groups/prime"); string(kv.Value) != `{"name":"prime"}` || kv.Key != "groups/prime" || kv.ModRev != r1 || kv.CreateRev != r1 {
		t.Fatalf("Get = %+v; want the value put at revision %d", kv, r1)
	}
	// An empty value is a present key, not an absent one.
	if kv := mustGet(t, s, "groups/empty"); len(kv.Value) != 0 || kv.CreateRev == 0 {
		t.Fatalf("Get of an empty value = %+v; want present and empty", kv)
	}
	txn(t, s, nil, store.Delete("groups/prime"), store.Delete("groups/never-there"))
	absent(t, s, "groups/prime")
	mustGet(t, s, "groups/empty")
}

func testPutCopiesValue(t *testing.T, s store.Store, _ Harness) {
	buf := []byte("first")
	if _, _, _, err := s.Txn(ctxT(t), nil, []store.Op{store.Put("k", buf)}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX")
	if kv := mustGet(t, s, "k"); string(kv.Value) != "first" {
		t.Fatalf("value = %q, want %q: Txn must not keep the caller's buffer", kv.Value, "first")
	}
	kv := mustGet(t, s, "k")
	copy(kv.Value, "YYYYY")
	if kv := mustGet(t, s, "k"); string(kv.Value) != "first" {
		t.Fatalf("value = %q, want %q: Get must return a copy", kv.Value, "first")
	}
}

func testListPrefixOrder(t *testing.T, s store.Store, h Harness) {
	for _, k := range []string{"r-09", "r-01", "b", "r-10", "a", "r-1"} {
		put(t, s, "replicas/"+k, "v"+k)
	}
	put(t, s, "replicas/empty", "")
	put(t, s, "replica", "outside")
	last := put(t, s, "replicas0", "outside")
	newest := put(t, s, "groups/a", "outside")
	kvs, rev, err := s.List(ctxT(t), "replicas/")
	if err != nil {
		t.Fatal(err)
	}
	want := "replicas/a replicas/b replicas/empty replicas/r-01 replicas/r-09 replicas/r-1 replicas/r-10"
	if got := keys(kvs); got != want {
		t.Fatalf("List order = %q, want %q", got, want)
	}
	for _, kv := range kvs {
		if k := strings.TrimPrefix(kv.Key, "replicas/"); k != "empty" && string(kv.Value) != "v"+k {
			t.Errorf("value of %s = %q", kv.Key, kv.Value)
		}
	}
	if h.SparseRevisions {
		if rev < newest || newest <= last {
			t.Errorf("List revision = %d after puts at %d then %d; want at least %d", rev, last, newest, newest)
		}
	} else if rev != last+1 {
		t.Errorf("List revision = %d, want the store's, %d", rev, last+1)
	}
	if kvs, _, err := s.List(ctxT(t), "nothing/"); err != nil || len(kvs) != 0 {
		t.Errorf("List of an empty prefix = %v, %v; want none", keys(kvs), err)
	}
	all, _, err := s.List(ctxT(t), "")
	if err != nil || len(all) != 10 {
		t.Errorf("List of every key = %q, %v; want 10 keys", keys(all), err)
	}
}

func testRevisions(t *testing.T, s store.Store, h Harness) {
	follows, unchanged := h.follows, h.unchanged
	r1 := put(t, s, "a", "1")
	// Every change of the store from now on, to check that the
	// transactions that change nothing make no revision.
	all, err := s.Watch(ctxT(t), "", r1+1)
	if err != nil {
		t.Fatal(err)
	}
	_, r2, _ := txn(t, s, nil, store.Put("a", []byte("2")), store.Put("b", []byte("1")))
	if !follows(r2, r1) {
		t.Fatalf("a transaction of two puts moved the revision from %d to %d, want the next", r1, r2)
	}
	a, b := mustGet(t, s, "a"), mustGet(t, s, "b")
	if a.ModRev != r2 || a.CreateRev != r1 || b.ModRev != r2 || b.CreateRev != r2 {
		t.Fatalf("after the second transaction a = %+v, b = %+v; want a mod %d create %d, b mod and create %d", a, b, r2, r1, r2)
	}
	// Deleting nothing changes nothing.
	_, r3, _ := txn(t, s, nil, store.Delete("nope"), store.DeletePrefix("none/"))
	if !unchanged(r3, r2) {
		t.Fatalf("a transaction that changed nothing moved the revision from %d to %d", r2, r3)
	}
	// A failed transaction neither.
	if ok, r, _ := txn(t, s, []store.Cond{store.CreateRevIs("a", 0)}, store.Put("c", nil)); ok || !unchanged(r, r2) {
		t.Fatalf("failed transaction = %v at %d, want false at %d", ok, r, r2)
	}
	_, r4, _ := txn(t, s, nil, store.Delete("a"))
	if !follows(r4, r3) {
		t.Fatalf("a delete moved the revision from %d to %d, want the next", r3, r4)
	}
	// A key created again has a new CreateRev.
	r5 := put(t, s, "a", "3")
	if a := mustGet(t, s, "a"); a.CreateRev != r5 || a.ModRev != r5 {
		t.Fatalf("a put again = %+v; want mod and create %d", a, r5)
	}
	// The same value put again is still a change.
	if r6 := put(t, s, "a", "3"); !follows(r6, r5) {
		t.Fatalf("putting the same value moved the revision from %d to %d, want the next", r5, r6)
	}
	want := []string{
		fmt.Sprintf("%d: put a=2 put b=1", r2),
		fmt.Sprintf("%d: delete a", r4),
		fmt.Sprintf("%d: put a=3", r5),
	}
	for _, w := range want {
		if got := describe(recv(t, all)); got != w {
			t.Fatalf("store's changes: %q, want %q (no revision for the transactions that changed nothing)", got, w)
		}
	}
}

func testConditions(t *testing.T, s store.Store, _ Harness) {
	r1 := put(t, s, "k", "v1")
	tests := []struct {
		name string
		cond store.Cond
		want bool
	}{
		{"value equal", store.ValueIs("k", []byte("v1")), true},
		{"value differs", store.ValueIs("k", []byte("v2")), false},
		{"empty value of an absent key", store.ValueIs("nope", nil), false},
		{"mod rev equal", store.ModRevIs("k", r1), true},
		{"mod rev differs", store.ModRevIs("k", r1+1), false},
		{"create rev equal", store.CreateRevIs("k", r1), true},
		{"present is not absent", store.CreateRevIs("k", 0), false},
		{"absent by create rev", store.CreateRevIs("nope", 0), true},
		{"absent by mod rev", store.ModRevIs("nope", 0), true},
	}
	for _, tt := range tests {
		ok, _, kvs := txn(t, s, []store.Cond{tt.cond})
		if ok != tt.want {
			t.Errorf("%s: Txn ok = %v, want %v", tt.name, ok, tt.want)
		}
		if !ok && (len(kvs) != 1 || kvs[0].Key != tt.cond.Key) {
			t.Errorf("%s: failed Txn returned %+v, want the compared key", tt.name, kvs)
		}
	}
	// On failure, the compared keys come back in the order of the
	// conditions, an absent key with revisions 0.
	ok, _, kvs := txn(t, s, []store.Cond{store.CreateRevIs("nope", 0), store.ModRevIs("k", 99), store.ValueIs("k", []byte("v1"))})
	if ok || len(kvs) != 3 {
		t.Fatalf("Txn = %v, %+v; want false and three keys", ok, kvs)
	}
	if kvs[0].Key != "nope" || kvs[0].ModRev != 0 || kvs[0].CreateRev != 0 || kvs[0].Value != nil && len(kvs[0].Value) != 0 {
		t.Errorf("absent compared key = %+v", kvs[0])
	}
	for _, kv := range kvs[1:] {
		if kv.Key != "k" || string(kv.Value) != "v1" || kv.ModRev != r1 || kv.CreateRev != r1 {
			t.Errorf("present compared key = %+v, want k=v1 at %d", kv, r1)
		}
	}
	// Compare-and-swap on ModRev.
	if ok, r2, _ := txn(t, s, []store.Cond{store.ModRevIs("k", r1)}, store.Put("k", []byte("v2"))); !ok || mustGet(t, s, "k").ModRev != r2 {
		t.Fatal("CAS on the current ModRev failed")
	}
	if ok, _, _ := txn(t, s, []store.Cond{store.ModRevIs("k", r1)}, store.Put("k", []byte("v3"))); ok {
		t.Fatal("CAS on a stale ModRev succeeded")
	}
	if kv := mustGet(t, s, "k"); string(kv.Value) != "v2" {
		t.Fatalf("value after a stale CAS = %q, want v2", kv.Value)
	}
}

func testFailedTxnAppliesNothing(t *testing.T, s store.Store, h Harness) {
	put(t, s, "b/keep", "1")
	_, rev, _ := txn(t, s, nil, store.Put("b/also", []byte("2")))
	ok, got, _ := txn(t, s, []store.Cond{store.ValueIs("b/keep", []byte("1")), store.CreateRevIs("b/also", 0)},
		store.Put("b/new", []byte("2")), store.Put("other/x", []byte("3")), store.Delete("b/keep"), store.DeletePrefix("b/al"))
	if ok || !h.unchanged(got, rev) {
		t.Fatalf("Txn = %v at %d; want false at %d", ok, got, rev)
	}
	kvs, _, err := s.List(ctxT(t), "")
	if err != nil || keys(kvs) != "b/also b/keep" {
		t.Fatalf("after a failed transaction: %q, %v; want b/also b/keep", keys(kvs), err)
	}
}

func testDeletePrefix(t *testing.T, s store.Store, h Harness) {
	for _, k := range []string{"replicas/a/1", "replicas/a/2", "replicas/ab/1", "replicas/b/1", "replicas/a"} {
		put(t, s, k, "v")
	}
	_, rev, _ := txn(t, s, nil, store.DeletePrefix("replicas/a/"))
	kvs, _, _ := s.List(ctxT(t), "replicas/")
	if got := keys(kvs); got != "replicas/a replicas/ab/1 replicas/b/1" {
		t.Fatalf("after deleting replicas/a/: %q", got)
	}
	if _, r2, _ := txn(t, s, nil, store.DeletePrefix("replicas/a/")); !h.unchanged(r2, rev) {
		t.Fatalf("deleting an empty prefix moved the revision from %d to %d", rev, r2)
	}
}

func testLimits(t *testing.T, s store.Store, _ Harness) {
	ops := func(n int) []store.Op {
		var out []store.Op
		for i := range n {
			out = append(out, store.Put(fmt.Sprintf("k/%03d", i), []byte("v")))
		}
		return out
	}
	_, _, _, err := s.Txn(ctxT(t), nil, ops(store.MaxTxnOps+1))
	if !errors.Is(err, store.ErrTooManyOps) || !strings.Contains(err.Error(), fmt.Sprint(store.MaxTxnOps)) {
		t.Fatalf("Txn of %d ops = %v; want ErrTooManyOps naming the limit", store.MaxTxnOps+1, err)
	}
	if kvs, _, _ := s.List(ctxT(t), "k/"); len(kvs) != 0 {
		t.Fatalf("a refused transaction stored %d keys", len(kvs))
	}
	var conds []store.Cond
	for i := range store.MaxTxnOps + 1 {
		conds = append(conds, store.CreateRevIs(fmt.Sprintf("c/%d", i), 0))
	}
	if _, _, _, err := s.Txn(ctxT(t), conds, nil); !errors.Is(err, store.ErrTooManyOps) {
		t.Fatalf("Txn of %d conditions = %v; want ErrTooManyOps", len(conds), err)
	}
	if ok, _, _ := txn(t, s, conds[:store.MaxTxnOps], ops(store.MaxTxnOps)...); !ok {
		t.Fatal("a transaction at the limits failed")
	}
	if kvs, _, _ := s.List(ctxT(t), "k/"); len(kvs) != store.MaxTxnOps {
		t.Fatalf("a transaction of %d puts stored %d keys", store.MaxTxnOps, len(kvs))
	}
}

func testBadTxns(t *testing.T, s store.Store, _ Harness) {
	put(t, s, "a/1", "v")
	tests := []struct {
		name  string
		conds []store.Cond
		ops   []store.Op
		want  string
	}{
		{"empty key", nil, []store.Op{store.Put("", nil)}, "empty key"},
		{"empty delete", nil, []store.Op{store.Delete("")}, "empty key"},
		{"empty prefix", nil, []store.Op{store.DeletePrefix("")}, "empty prefix"},
		{"empty condition key", []store.Cond{store.CreateRevIs("", 0)}, nil, "empty key"},
		{"unknown target", []store.Cond{{Key: "a/1"}}, nil, "unknown target"},
		{"unknown op", nil, []store.Op{{Key: "a/1"}}, "unknown kind"},
		{"put twice", nil, []store.Op{store.Put("x", nil), store.Put("x", nil)}, `both put "x"`},
		{"put and delete", nil, []store.Op{store.Put("a/1", nil), store.Delete("a/1")}, `puts "a/1", which op 1 deletes`},
		{"put under a deleted prefix", nil, []store.Op{store.DeletePrefix("a/"), store.Put("a/2", nil)}, `puts "a/2", which op 0 deletes`},
	}
	for _, tt := range tests {
		_, _, _, err := s.Txn(ctxT(t), tt.conds, tt.ops)
		if err == nil || !strings.HasPrefix(err.Error(), "store: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Txn = %v; want a store: error mentioning %q", tt.name, err, tt.want)
		}
	}
	// Deletes may overlap (as in etcd).
	txn(t, s, nil, store.DeletePrefix("a/"), store.Delete("a/1"))
	absent(t, s, "a/1")
}

// testConcurrentCAS increments a counter from several goroutines by
// compare-and-swap: no increment is lost, none applied twice.
func testConcurrentCAS(t *testing.T, s store.Store, _ Harness) {
	const workers, each = 4, 25
	put(t, s, "n", "0")
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				kv, err := s.Get(ctx, "n")
				if err != nil {
					errs <- err
					return
				}
				var n int
				fmt.Sscan(string(kv.Value), &n)
				ok, _, _, err := s.Txn(ctx, []store.Cond{store.ModRevIs("n", kv.ModRev)}, []store.Op{store.Put("n", []byte(fmt.Sprint(n+1)))})
				if err != nil {
					errs <- err
					return
				}
				if ok {
					done++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if kv := mustGet(t, s, "n"); string(kv.Value) != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s, want %d", kv.Value, workers*each)
	}
}

// recv reads the next response of a watch.
func recv(t *testing.T, ch <-chan store.WatchResponse) store.WatchResponse {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return r
	case <-time.After(timeout):
		t.Fatal("no watch response")
	}
	return store.WatchResponse{}
}

// describe is a response as "rev: put k=v, delete k".
func describe(r store.WatchResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", r.Rev)
	for _, e := range r.Events {
		fmt.Fprintf(&b, " %s %s", e.Type, e.KV.Key)
		if e.Type == store.EventPut {
			fmt.Fprintf(&b, "=%s", e.KV.Value)
		}
		if e.KV.ModRev != r.Rev {
			fmt.Fprintf(&b, "(mod %d)", e.KV.ModRev)
		}
	}
	if r.Err != nil {
		fmt.Fprintf(&b, " error %v", r.Err)
	}
	return b.String()
}

func testWatch(t *testing.T, s store.Store, _ Harness) {
	put(t, s, "groups/old", "before")
	ch, err := s.Watch(ctxT(t), "groups/", 0)
	if err != nil {
		t.Fatal(err)
	}
	r1 := put(t, s, "groups/a", "1")
	put(t, s, "replicas/a/1", "not watched")
	_, r3, _ := txn(t, s, nil, store.Put("groups/b", []byte("2")), store.Put("replicas/a/2", nil), store.Delete("groups/old"))
	txn(t, s, nil, store.Delete("groups/nope")) // changes nothing
	_, r4, _ := txn(t, s, nil, store.DeletePrefix("groups/"))
	want := []string{
		fmt.Sprintf("%d: put groups/a=1", r1),
		fmt.Sprintf("%d: put groups/b=2 delete groups/old", r3),
		fmt.Sprintf("%d: delete groups/a delete groups/b", r4),
	}
	for _, w := range want {
		if got := describe(recv(t, ch)); got != w {
			t.Fatalf("watch response %q, want %q", got, w)
		}
	}
	// CreateRev travels with a put.
	_, r5, _ := txn(t, s, nil, store.Put("groups/a", []byte("x")))
	r6 := put(t, s, "groups/a", "y")
	if e := recv(t, ch).Events[0]; e.KV.CreateRev != r5 || e.KV.ModRev != r5 {
		t.Fatalf("event of a creating put = %+v, want mod and create %d", e.KV, r5)
	}
	if e := recv(t, ch).Events[0]; e.KV.CreateRev != r5 || e.KV.ModRev != r6 {
		t.Fatalf("event of an updating put = %+v, want mod %d create %d", e.KV, r6, r5)
	}
}

// testWatchFromPast watches from a revision already committed: List then
// Watch from its revision + 1 misses nothing and repeats nothing.
func testWatchFromPast(t *testing.T, s store.Store, h Harness) {
	r1 := put(t, s, "g/a", "1")
	r2 := put(t, s, "g/b", "2")
	kvs, rev, err := s.List(ctxT(t), "g/")
	if err != nil || len(kvs) != 2 || !h.unchanged(rev, r2) {
		t.Fatalf("List = %q at %d, %v", keys(kvs), rev, err)
	}
	r3 := put(t, s, "g/c", "3")
	all, err := s.Watch(ctxT(t), "g/", r1)
	if err != nil {
		t.Fatal(err)
	}
	from, err := s.Watch(ctxT(t), "g/", rev+1)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{fmt.Sprintf("%d: put g/a=1", r1), fmt.Sprintf("%d: put g/b=2", r2), fmt.Sprintf("%d: put g/c=3", r3)} {
		if got := describe(recv(t, all)); got != w {
			t.Fatalf("watch from %d: %q, want %q", r1, got, w)
		}
	}
	if got, w := describe(recv(t, from)), fmt.Sprintf("%d: put g/c=3", r3); got != w {
		t.Fatalf("watch from %d: %q, want %q", rev+1, got, w)
	}
	// A watch from a revision not yet written waits for it, and skips the
	// revisions before it.
	if h.SparseRevisions {
		// The next revision is unknown: watch from the one after a put.
		r4 := put(t, s, "g/d", "4")
		future, err := s.Watch(ctxT(t), "g/", r4+1)
		if err != nil {
			t.Fatal(err)
		}
		r5 := put(t, s, "g/e", "5")
		if got, w := describe(recv(t, future)), fmt.Sprintf("%d: put g/e=5", r5); got != w {
			t.Fatalf("watch from %d: %q, want %q", r4+1, got, w)
		}
		return
	}
	future, err := s.Watch(ctxT(t), "g/", r3+2)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "g/d", "4")
	r5 := put(t, s, "g/e", "5")
	if got, w := describe(recv(t, future)), fmt.Sprintf("%d: put g/e=5", r5); got != w {
		t.Fatalf("watch from %d: %q, want %q", r3+2, got, w)
	}
}

func testWatchCompacted(t *testing.T, s store.Store, h Harness) {
	r1 := put(t, s, "g/a", "1")
	r2 := put(t, s, "g/a", "2")
	r3 := put(t, s, "g/a", "3")
	h.Compact(t, s, r2)
	for _, from := range []int64{r1, r2} {
		if _, err := s.Watch(ctxT(t), "g/", from); !errors.Is(err, store.ErrCompacted) {
			t.Errorf("Watch from compacted revision %d = %v; want ErrCompacted", from, err)
		}
	}
	ch, err := s.Watch(ctxT(t), "g/", r3)
	if err != nil {
		t.Fatalf("Watch from %d, after the compaction: %v", r3, err)
	}
	if got, w := describe(recv(t, ch)), fmt.Sprintf("%d: put g/a=3", r3); got != w {
		t.Fatalf("watch from %d: %q, want %q", r3, got, w)
	}
}

func testWatchEndsWithContext(t *testing.T, s store.Store, _ Harness) {
	ctx, cancel := context.WithCancel(ctxT(t))
	ch, err := s.Watch(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// The channel closes, possibly after responses already in flight.
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-time.After(timeout):
			t.Fatal("watch channel still open after its context ended")
		}
	}
}

func testClose(t *testing.T, s store.Store, _ Harness) {
	put(t, s, "k", "v")
	ch, err := s.Watch(ctxT(t), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("watch delivered after Close")
		}
	case <-time.After(timeout):
		t.Fatal("watch channel still open after Close")
	}
	if _, err := s.Get(ctxT(t), "k"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get after Close = %v; want ErrClosed", err)
	}
	if _, _, _, err := s.Txn(ctxT(t), nil, []store.Op{store.Put("k", nil)}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Txn after Close = %v; want ErrClosed", err)
	}
	if _, err := s.Watch(ctxT(t), "", 0); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Watch after Close = %v; want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
