package etcdstore

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// KV is the store's etcd client as a clientv3.KV whose writes count in the
// store's metrics (fulcrum_store_etcd_writes_total, with the latency of
// transactions) and tell its reachability, as the store's own requests do:
// for packages that write etcd beside the store (planned moves, say), so
// that the counter holds every write of this process. Reads pass through
// uncounted.
func (s *Store) KV() clientv3.KV { return countedKV{KV: s.cli.KV, s: s} }

type countedKV struct {
	clientv3.KV
	s *Store
}

func (k countedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	resp, err := k.KV.Put(ctx, key, val, opts...)
	k.s.wrote(ctx, "put", err)
	return resp, err
}

func (k countedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	resp, err := k.KV.Delete(ctx, key, opts...)
	k.s.wrote(ctx, "delete", err)
	return resp, err
}

func (k countedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	resp, err := k.KV.Do(ctx, op)
	switch {
	case op.IsPut():
		k.s.wrote(ctx, "put", err)
	case op.IsDelete():
		k.s.wrote(ctx, "delete", err)
	case op.IsTxn():
		k.s.wrote(ctx, "txn", err)
	}
	return resp, err
}

func (k countedKV) Txn(ctx context.Context) clientv3.Txn {
	return &countedTxn{Txn: k.KV.Txn(ctx), s: k.s, ctx: ctx}
}

// countedTxn counts its Commit.
type countedTxn struct {
	clientv3.Txn
	s   *Store
	ctx context.Context
}

func (t *countedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *countedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *countedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *countedTxn) Commit() (*clientv3.TxnResponse, error) {
	start := time.Now()
	resp, err := t.Txn.Commit()
	t.s.done(t.ctx, opTxn, start, err)
	if err == nil {
		t.s.opts.Metrics.wrote("txn")
	}
	return resp, err
}

// wrote records a put or delete made beside the store for a caller's
// ctx: its count when etcd answered, and what the outcome tells of etcd's
// reachability (see done).
func (s *Store) wrote(ctx context.Context, op string, err error) {
	if err == nil {
		s.opts.Metrics.wrote(op)
	}
	if err != nil && ctx.Err() != nil {
		return
	}
	s.health.record(err, time.Now())
}
