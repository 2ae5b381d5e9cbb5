package migrate

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// shared is the package's one-member etcd (nil when etcd is not
// installed: the tests then fail with CI=true and skip otherwise).
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { etcdtest.Main(m, &shared) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var prefixes atomic.Int64

// openEtcd opens a store under a prefix no other test uses.
func openEtcd(t *testing.T) *etcdstore.Store {
	t.Helper()
	etcdtest.Need(t)
	prefix := fmt.Sprintf("/migrate-%d/", prefixes.Add(1))
	s, err := etcdstore.Open(ctxT(t), etcdstore.Options{Endpoints: shared.Endpoints(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fill writes n replicas of group g, and g, into a new bbolt store, and
// returns its keys.
func fill(t *testing.T, n int) []store.KV {
	t.Helper()
	b, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ops := []store.Op{store.Put("groups/g", []byte(`{"name":"g"}`)), store.Put("blocks/g/ab", []byte{}), store.Put("groups/bin", []byte{0, 1, 0xff, '\n'})}
	for i := range n {
		ops = append(ops, store.Put(fmt.Sprintf("replicas/g/r-%04x", i), []byte(fmt.Sprintf(`{"id":"r-%04x"}`, i))))
	}
	for len(ops) > 0 {
		k := min(len(ops), store.MaxTxnOps)
		if _, _, _, err := b.Txn(ctxT(t), nil, ops[:k]); err != nil {
			t.Fatal(err)
		}
		ops = ops[k:]
	}
	kvs, _, err := b.List(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	return kvs
}

// TestCopyAndVerify: 303 keys from a real bbolt store reach a real etcd in
// transactions of at most 128 puts (one etcd revision each), values byte
// for byte, and Verify finds every one.
func TestCopyAndVerify(t *testing.T) {
	src := fill(t, 300)
	dst := openEtcd(t)
	c, err := Copy(ctxT(t), dst, src, false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Keys != 303 || c.Txns != 3 {
		t.Errorf("Copy = %+v, want 303 keys in 3 transactions", c)
	}
	got, _, err := dst.List(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	perRev := map[int64]int{}
	for i, kv := range got {
		perRev[kv.ModRev]++
		if i < len(src) && (kv.Key != src[i].Key || string(kv.Value) != string(src[i].Value)) {
			t.Errorf("etcd key %d = %q %q, want %q %q", i, kv.Key, kv.Value, src[i].Key, src[i].Value)
		}
	}
	if len(got) != len(src) {
		t.Errorf("etcd holds %d keys, want %d", len(got), len(src))
	}
	if len(perRev) != 3 {
		t.Errorf("keys written at %d revisions, want 3 (one per transaction): %v", len(perRev), perRev)
	}
	for rev, n := range perRev {
		if n > store.MaxTxnOps {
			t.Errorf("revision %d wrote %d keys, more than %d", rev, n, store.MaxTxnOps)
		}
	}
	v, err := Verify(ctxT(t), dst, src)
	if err != nil || !v.OK() || v.Checked != 303 {
		t.Errorf("Verify = %+v, %v; want 303 checked, all equal", v, err)
	}

	// Verify catches a changed and a deleted key.
	if _, _, _, err := dst.Txn(ctxT(t), nil, []store.Op{store.Put("groups/g", []byte("{}")), store.Delete("replicas/g/r-0001")}); err != nil {
		t.Fatal(err)
	}
	v, err = Verify(ctxT(t), dst, src)
	if err != nil || v.OK() || !reflect.DeepEqual(v.Missing, []string{"replicas/g/r-0001"}) || !reflect.DeepEqual(v.Different, []string{"groups/g"}) {
		t.Errorf("Verify after changes = %+v, %v; want replicas/g/r-0001 missing, groups/g different", v, err)
	}
}

// TestCopyUnforcedStopsAtAnExistingKey: a key the target holds (written by
// another writer after the plan) stops an unforced copy, and the
// transaction that found it writes nothing.
func TestCopyUnforcedStopsAtAnExistingKey(t *testing.T) {
	src := fill(t, 200) // 203 keys: transactions of 128 and 75
	dst := openEtcd(t)
	last := src[len(src)-1].Key
	if _, _, _, err := dst.Txn(ctxT(t), nil, []store.Op{store.Put(last, []byte("theirs"))}); err != nil {
		t.Fatal(err)
	}
	c, err := Copy(ctxT(t), dst, src, false)
	if err == nil || !strings.Contains(err.Error(), "key "+last+" appeared in the target") {
		t.Fatalf("Copy = %v, want an error naming %s", err, last)
	}
	if c.Keys != 128 || c.Txns != 1 {
		t.Errorf("Copy wrote %+v before stopping, want the first transaction (128 keys)", c)
	}
	got, _, err := dst.List(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 129 {
		t.Errorf("etcd holds %d keys, want 129 (128 copied and the other writer's)", len(got))
	}
	kv, err := dst.Get(ctxT(t), last)
	if err != nil || string(kv.Value) != "theirs" {
		t.Errorf("%s = %q, %v; want the other writer's value kept", last, kv.Value, err)
	}
}

// TestCopyForced overwrites the keys the source holds and leaves every
// other key of the target.
func TestCopyForced(t *testing.T) {
	src := fill(t, 2)
	dst := openEtcd(t)
	if _, _, _, err := dst.Txn(ctxT(t), nil, []store.Op{store.Put("groups/g", []byte("old")), store.Put("groups/other", []byte("kept"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(ctxT(t), dst, src, true); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(ctxT(t), dst, src)
	if err != nil || !v.OK() {
		t.Errorf("Verify = %+v, %v", v, err)
	}
	kv, err := dst.Get(ctxT(t), "groups/other")
	if err != nil || string(kv.Value) != "kept" {
		t.Errorf("groups/other = %q, %v; want it kept", kv.Value, err)
	}
}

// TestCopyLargeValues: values that would exceed etcd's request limit in
// one transaction are split by size (12 keys of 300 KiB: four
// transactions of at most 1 MiB).
func TestCopyLargeValues(t *testing.T) {
	var src []store.KV
	for i := range 12 {
		v := make([]byte, 300<<10)
		v[0] = byte(i)
		src = append(src, store.KV{Key: fmt.Sprintf("groups/g%02d", i), Value: v})
	}
	dst := openEtcd(t)
	c, err := Copy(ctxT(t), dst, src, false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Keys != 12 || c.Txns != 4 {
		t.Errorf("Copy = %+v, want 12 keys in 4 transactions", c)
	}
	if v, err := Verify(ctxT(t), dst, src); err != nil || !v.OK() {
		t.Errorf("Verify = %+v, %v", v, err)
	}
}
