package leader

import (
	"context"
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// Store returns st with every transaction conditioned on the fence (the
// same etcd transaction checks the election key, etcdstore.TxnIf): a
// leader's writes through it apply only while its term lasts; once the
// term is over Txn applies nothing and fails with an error wrapping
// ErrDeposed. Get, List and Watch are st's. Closing the returned store
// does nothing: st stays its owner's to close.
func (f Fence) Store(st *etcdstore.Store) store.Store { return fencedStore{Store: st, f: f} }

type fencedStore struct {
	*etcdstore.Store
	f Fence
}

// Txn implements store.Store through the fence.
func (s fencedStore) Txn(ctx context.Context, conds []store.Cond, ops []store.Op) (bool, int64, []store.KV, error) {
	ok, rev, kvs, err := s.Store.TxnIf(ctx, s.f.Cmp(), conds, ops)
	if errors.Is(err, etcdstore.ErrGuard) {
		return false, rev, nil, fmt.Errorf("%w: group %q: election key %s no longer of term %d (revision %d)", ErrDeposed, s.f.Group, s.f.Key, s.f.Term, rev)
	}
	return ok, rev, kvs, err
}

// Close does nothing: the underlying store is not the fence's.
func (fencedStore) Close() error { return nil }
