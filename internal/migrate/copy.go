package migrate

import (
	"context"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Copied is what Copy wrote.
type Copied struct {
	// Keys is how many keys were put; Txns in how many transactions.
	Keys, Txns int
}

// MaxTxnBytes bounds the keys and values of one transaction, below etcd's
// default request limit (--max-request-bytes, 1.5 MiB). A single larger
// key goes alone.
const MaxTxnBytes = 1 << 20

// chunkLen is how many keys of src go into the next transaction: at most
// store.MaxTxnOps, at most MaxTxnBytes of keys and values, at least one.
func chunkLen(src []store.KV) int {
	size := 0
	for i, kv := range src {
		size += len(kv.Key) + len(kv.Value)
		if i == store.MaxTxnOps || (i > 0 && size > MaxTxnBytes) {
			return i
		}
	}
	return len(src)
}

// Copy puts every key of src into dst with its value unchanged, in
// transactions of at most store.MaxTxnOps puts and MaxTxnBytes each, in
// src's order.
// Unless force, each put is conditioned on its key being absent: a key
// that appeared meanwhile (another writer) stops the copy with an error
// naming it, and the transaction that found it writes nothing. With force
// it overwrites the keys src holds; it never deletes a key. A failure part
// way leaves the transactions before it applied: Copied says how many.
func Copy(ctx context.Context, dst store.Store, src []store.KV, force bool) (Copied, error) {
	var c Copied
	for len(src) > 0 {
		n := chunkLen(src)
		chunk := src[:n]
		ops := make([]store.Op, n)
		var conds []store.Cond
		for i, kv := range chunk {
			ops[i] = store.Put(kv.Key, kv.Value)
			if !force {
				conds = append(conds, store.CreateRevIs(kv.Key, 0))
			}
		}
		ok, _, cur, err := dst.Txn(ctx, conds, ops)
		if err != nil {
			return c, fmt.Errorf("migrate: copy keys %s to %s: %w", chunk[0].Key, chunk[n-1].Key, err)
		}
		if !ok {
			for _, kv := range cur {
				if kv.CreateRev != 0 {
					return c, fmt.Errorf("migrate: key %s appeared in the target during the copy (another writer): this transaction wrote nothing; run again with --force to overwrite", kv.Key)
				}
			}
			return c, fmt.Errorf("migrate: copy keys %s to %s: refused by the target", chunk[0].Key, chunk[n-1].Key)
		}
		c.Keys += n
		c.Txns++
		src = src[n:]
	}
	return c, nil
}
