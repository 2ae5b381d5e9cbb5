package leader

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrDeposed is wrapped by Fence.Txn when the election key no longer has
// the fence's term: the writer is not the leader any more (or never was
// of that term), and nothing was changed.
var ErrDeposed = errors.New("leader: deposed")

// Fence conditions a leader's writes on its term: Key is its election key,
// Term the key's create revision when it won. While the key exists with
// that create revision no other instance is leader of the group; once the
// key is gone (the lease expired or was revoked, the leader resigned) no
// transaction through the fence applies, whatever its writer believes.
type Fence struct {
	Group string
	Key   string
	Term  int64
}

// Cmp is the fence's condition, for callers that build transactions of
// their own: the election key's create revision equals the term.
func (f Fence) Cmp() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(f.Key), "=", f.Term)
}

// Txn commits, only while the fence holds, the transaction If(cmps).
// Then(then).Else(els) and returns its response (Succeeded tells which
// branch ran; Header is the outer transaction's). When the fence does not
// hold nothing runs and the error wraps ErrDeposed. As with any etcd
// request, an error other than ErrDeposed leaves it unknown whether the
// transaction applied; a retry through the same fence applies at most
// while the term lasts.
func (f Fence) Txn(ctx context.Context, kv clientv3.KV, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	resp, err := kv.Txn(ctx).If(f.Cmp()).Then(clientv3.OpTxn(cmps, then, els)).Commit()
	if err != nil {
		return nil, fmt.Errorf("leader: group %q: fenced txn of term %d: %w", f.Group, f.Term, err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: group %q: election key %s no longer of term %d (revision %d)", ErrDeposed, f.Group, f.Key, f.Term, resp.Header.Revision)
	}
	inner := (*clientv3.TxnResponse)(resp.Responses[0].GetResponseTxn())
	if inner == nil {
		return nil, fmt.Errorf("leader: group %q: fenced txn of term %d: no inner response", f.Group, f.Term)
	}
	inner.Header = resp.Header
	return inner, nil
}
