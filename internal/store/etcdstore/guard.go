package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// ErrGuard is wrapped by TxnIf when its guard does not hold: nothing was
// applied.
var ErrGuard = errors.New("store: etcd guard does not hold")

// TxnIf is Txn applied only while guard holds: a compare on any etcd key,
// inside the prefix or not (a leader's election key, package leader). The
// guard is checked in the same etcd transaction as conds and ops (an
// outer transaction around Txn's), so nothing applies once it fails. When
// the guard fails the error wraps ErrGuard; otherwise the results are
// Txn's.
func (s *Store) TxnIf(ctx context.Context, guard clientv3.Cmp, conds []store.Cond, ops []store.Op) (bool, int64, []store.KV, error) {
	if err := store.CheckTxn(conds, ops); err != nil {
		return false, 0, nil, err
	}
	rctx, cancel, err := s.reqCtx(ctx)
	if err != nil {
		return false, 0, nil, err
	}
	defer cancel()
	cmps, then, reads := s.txnOps(conds, ops)
	start := time.Now()
	resp, err := s.cli.Txn(rctx).If(guard).Then(clientv3.OpTxn(cmps, then, reads)).Commit()
	s.done(ctx, opTxn, start, err)
	if err != nil {
		return false, 0, nil, s.wrap("txn", "", err)
	}
	s.opts.Metrics.wrote("txn")
	if !resp.Succeeded {
		return false, resp.Header.Revision, nil, fmt.Errorf("%w: %s (revision %d)", ErrGuard, guard.KeyBytes(), resp.Header.Revision)
	}
	inner := resp.Responses[0].GetResponseTxn()
	if inner == nil {
		return false, 0, nil, s.wrap("txn", "", errors.New("no inner transaction response"))
	}
	if inner.Succeeded {
		return true, resp.Header.Revision, nil, nil
	}
	kvs := make([]store.KV, len(conds))
	for i, r := range inner.Responses {
		kvs[i] = store.KV{Key: conds[i].Key}
		if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			kvs[i] = s.kv(rr.Kvs[0])
		}
	}
	return false, resp.Header.Revision, kvs, nil
}
