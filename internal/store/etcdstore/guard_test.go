package etcdstore

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// TestTxnIf: a guard on a key outside the store's keys lets the
// transaction run as Txn would while it holds, and applies nothing once
// it fails.
func TestTxnIf(t *testing.T) {
	s := openT(t, "")
	ctx := ctxT(t)
	guardKey := s.Prefix() + "leaders/g/1"
	gr, err := s.Client().Put(ctx, guardKey, "a")
	if err != nil {
		t.Fatal(err)
	}
	guard := clientv3.Compare(clientv3.CreateRevision(guardKey), "=", gr.Header.Revision)

	ok, rev, _, err := s.TxnIf(ctx, guard, nil, []store.Op{store.Put("k", []byte("1"))})
	if err != nil || !ok || rev <= gr.Header.Revision {
		t.Fatalf("TxnIf while the guard holds: %v %d %v", ok, rev, err)
	}
	ok, _, kvs, err := s.TxnIf(ctx, guard, []store.Cond{store.ValueIs("k", []byte("2"))}, []store.Op{store.Put("k", []byte("3"))})
	if err != nil || ok || len(kvs) != 1 || string(kvs[0].Value) != "1" || kvs[0].Key != "k" {
		t.Fatalf("TxnIf with a failing condition: %v %+v %v, want false and k=1", ok, kvs, err)
	}
	if _, _, _, err := s.TxnIf(ctx, guard, nil, []store.Op{store.Put("k", []byte("1")), store.Put("k", []byte("2"))}); err == nil {
		t.Error("TxnIf with two ops on one key: no error")
	}

	if _, err := s.Client().Delete(ctx, guardKey); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.TxnIf(ctx, guard, nil, []store.Op{store.Put("k", []byte("4"))}); !errors.Is(err, ErrGuard) {
		t.Fatalf("TxnIf after the guard key went: %v, want ErrGuard", err)
	}
	if kv, err := s.Get(ctx, "k"); err != nil || string(kv.Value) != "1" {
		t.Errorf("k after the refused TxnIf: %q %v, want 1", kv.Value, err)
	}
}
