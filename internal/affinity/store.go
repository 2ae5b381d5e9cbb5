package affinity

import (
	"context"
	"time"
)

// Store keeps client-activated entries cluster-wide (cluster mode: etcd,
// each entry on a lease of StoreTTL(rule timeout)), so that every
// instance sends an object's calls to the replica that created it. A
// Store is safe for concurrent use; its methods return by ctx's deadline.
type Store interface {
	// Put records (rule, key) → replica on a lease of ttl.
	Put(ctx context.Context, rule int, key, replica string, ttl time.Duration) error
	// Renew extends the lease of (rule, key) by its ttl again.
	Renew(ctx context.Context, rule int, key string) error
	// Get returns the replica of (rule, key); ok false when there is none.
	Get(ctx context.Context, rule int, key string) (replica string, ok bool, err error)
	// Delete removes (rule, key).
	Delete(ctx context.Context, rule int, key string) error
}

// StoreTTL is the lease of an entry whose rule has timeout: rounded up
// to whole seconds, at least 2 s.
func StoreTTL(timeout time.Duration) time.Duration {
	s := (timeout + time.Second - 1) / time.Second * time.Second
	return max(s, 2*time.Second)
}

// StoreTimeout bounds one Store call made for a call or connection.
const StoreTimeout = time.Second
