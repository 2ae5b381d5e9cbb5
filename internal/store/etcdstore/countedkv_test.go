package etcdstore

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// TestKVCountsWrites: writes made beside the store through KV, and the
// guarded transactions of TxnIf, count in fulcrum_store_etcd_writes_total
// by op; reads do not.
func TestKVCountsWrites(t *testing.T) {
	t.Parallel()
	etcdtest.Need(t)
	m := NewMetrics()
	s, err := Open(ctxT(t), Options{Endpoints: shared.Endpoints(), Prefix: newPrefix(t), DialTimeout: 5 * time.Second, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	kv, ctx := s.KV(), ctxT(t)
	key := s.Prefix() + "beside/k"
	if _, err := kv.Put(ctx, key, "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Do(ctx, clientv3.OpPut(key, "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", "2")).Then(clientv3.OpPut(key, "3")).Else().Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.TxnIf(ctx, clientv3.Compare(clientv3.CreateRevision(key), "=", 0), nil, []store.Op{store.Put("k", []byte("1"))}); err != nil {
		t.Fatal(err)
	}
	mfs := gather(t, m)
	for op, want := range map[string]float64{"put": 2, "delete": 1, "txn": 2} {
		if got := byOp(t, mfs, "fulcrum_store_etcd_writes_total", op).GetCounter().GetValue(); got != want {
			t.Errorf("fulcrum_store_etcd_writes_total{op=%s} = %v, want %v", op, got, want)
		}
	}
}
