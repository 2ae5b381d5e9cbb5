package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/affinity"
	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
)

// DefaultRequestTimeout bounds each etcd request of the store when the
// caller's context has no earlier deadline.
const DefaultRequestTimeout = 2 * time.Second

// maxCached is how many entries' leases one store remembers before it
// forgets those it has not renewed for their timeout; a forgotten lease
// costs one read at the next Renew.
const maxCached = 1 << 16

// ErrNotFound is wrapped by Renew when etcd holds no entry for the object
// (it expired, or was deleted): the caller drops its own.
var ErrNotFound = errors.New("affinity: no such entry in etcd")

// Options of a group's store.
type Options struct {
	// Client is the etcd client (leases and reads); the store does not
	// close it.
	Client *clientv3.Client
	// KV writes the entries; nil: Client. The deployment store's KV()
	// counts them in its metrics.
	KV clientv3.KV
	// Root is the etcd key of the deployment store's relative key ""
	// (etcdstore.Store.Key("") of package store/etcdstore): the entries
	// are at Root + groupstore.AffinityKey(Group, rule, key).
	Root string
	// Group names the group.
	Group string
	// Clock paces the renewals; nil: the system clock.
	Clock clock.Clock
	// RequestTimeout bounds each request; default DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// Store is one group's client-activated entries in etcd; it implements
// affinity.Store. Safe for concurrent use.
type Store struct {
	opts      Options
	endpoints string

	mu     sync.Mutex
	leases map[entryID]*leaseInfo
}

type entryID struct {
	rule int
	key  string
}

// leaseInfo is what this instance knows of an entry's lease.
type leaseInfo struct {
	id      clientv3.LeaseID
	timeout time.Duration
	renewed time.Time // zero: not renewed by this instance yet
}

// value is an entry's value in etcd.
type value struct {
	Replica string `json:"replica"`
	// TimeoutMS is the rule's timeout, which paces the renewals of the
	// instances that did not create the entry.
	TimeoutMS int64 `json:"timeout_ms"`
}

// New returns the store of opts.Group.
func New(opts Options) (*Store, error) {
	if opts.Client == nil {
		return nil, errors.New("affinity: etcd store: client: none given")
	}
	if opts.Group == "" {
		return nil, errors.New("affinity: etcd store: group: empty name")
	}
	if !strings.HasSuffix(opts.Root, "/") {
		return nil, fmt.Errorf("affinity: etcd store: root %q: must end with /", opts.Root)
	}
	if opts.KV == nil {
		opts.KV = opts.Client.KV
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.RequestTimeout < 0 {
		return nil, fmt.Errorf("affinity: etcd store: request timeout %v: must be positive", opts.RequestTimeout)
	}
	return &Store{
		opts:      opts,
		endpoints: strings.Join(opts.Client.Endpoints(), ","),
		leases:    map[entryID]*leaseInfo{},
	}, nil
}

func (s *Store) key(rule int, key string) string {
	return s.opts.Root + groupstore.AffinityKey(s.opts.Group, rule, key)
}

// wrap names etcd, the operation and the entry of an error.
func (s *Store) wrap(op string, rule int, key string, err error) error {
	return fmt.Errorf("affinity: etcd at %s: %s group %s rule %d key %q: %w", s.endpoints, op, s.opts.Group, rule, key, err)
}

// Put makes the entry (rule, key) → replica on a new lease of
// LeaseTTL(timeout), replacing any entry of that object.
func (s *Store) Put(ctx context.Context, rule int, key, replica string, timeout time.Duration) error {
	val, err := json.Marshal(value{Replica: replica, TimeoutMS: timeout.Milliseconds()})
	if err != nil {
		return s.wrap("put", rule, key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	g, err := s.opts.Client.Grant(ctx, LeaseTTL(timeout))
	if err != nil {
		return s.wrap("grant a lease for", rule, key, err)
	}
	if _, err := s.opts.KV.Put(ctx, s.key(rule, key), string(val), clientv3.WithLease(g.ID)); err != nil {
		// The lease holds nothing: let it go now if etcd answers, else
		// it expires by itself.
		_, _ = s.opts.Client.Revoke(ctx, g.ID)
		return s.wrap("put", rule, key, err)
	}
	s.remember(entryID{rule, key}, &leaseInfo{id: g.ID, timeout: timeout, renewed: s.opts.Clock.Now()})
	return nil
}

// Renew tells etcd that the object (rule, key) has seen a call: its
// lease is kept alive, at most once per timeout/3 on this instance (in
// between it returns nil at once). It fails wrapping ErrNotFound when
// etcd holds no entry for the object any more.
func (s *Store) Renew(ctx context.Context, rule int, key string) error {
	id := entryID{rule, key}
	now := s.opts.Clock.Now()
	s.mu.Lock()
	info, ok := s.leases[id]
	var prev time.Time
	if ok {
		if !renewDue(info.renewed, info.timeout, now) {
			s.mu.Unlock()
			return nil
		}
		// Claim this renewal, so that concurrent calls do not renew too.
		prev, info.renewed = info.renewed, now
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	if !ok {
		got, found, err := s.read(ctx, rule, key)
		if err != nil {
			return err
		}
		if !found {
			return s.wrap("renew", rule, key, ErrNotFound)
		}
		info = &leaseInfo{id: got.lease, timeout: got.timeout, renewed: now}
		s.remember(id, info)
	}
	if _, err := s.opts.Client.KeepAliveOnce(ctx, info.id); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			s.forget(id, info.id)
			return s.wrap("renew", rule, key, ErrNotFound)
		}
		s.mu.Lock()
		if info.renewed.Equal(now) {
			info.renewed = prev // not renewed: the next call tries again
		}
		s.mu.Unlock()
		return s.wrap("renew", rule, key, err)
	}
	return nil
}

// Get returns the replica of the object (rule, key), which any instance
// may have created; ok is false when etcd holds no entry for it.
func (s *Store) Get(ctx context.Context, rule int, key string) (replica string, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	got, found, err := s.read(ctx, rule, key)
	if err != nil || !found {
		return "", false, err
	}
	id := entryID{rule, key}
	s.mu.Lock()
	if info, ok := s.leases[id]; !ok || info.id != got.lease {
		s.rememberLocked(id, &leaseInfo{id: got.lease, timeout: got.timeout})
	}
	s.mu.Unlock()
	return got.replica, true, nil
}

// Delete removes the entry of the object (rule, key); deleting an absent
// one is not an error.
func (s *Store) Delete(ctx context.Context, rule int, key string) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	if _, err := s.opts.KV.Delete(ctx, s.key(rule, key)); err != nil {
		return s.wrap("delete", rule, key, err)
	}
	s.mu.Lock()
	delete(s.leases, entryID{rule, key})
	s.mu.Unlock()
	return nil
}

// read is an entry as etcd holds it.
type read struct {
	replica string
	lease   clientv3.LeaseID
	timeout time.Duration
}

func (s *Store) read(ctx context.Context, rule int, key string) (read, bool, error) {
	resp, err := s.opts.Client.Get(ctx, s.key(rule, key))
	if err != nil {
		return read{}, false, s.wrap("get", rule, key, err)
	}
	if len(resp.Kvs) == 0 {
		return read{}, false, nil
	}
	kv := resp.Kvs[0]
	var v value
	if err := json.Unmarshal(kv.Value, &v); err != nil || v.Replica == "" {
		return read{}, false, s.wrap("get", rule, key, fmt.Errorf("corrupt entry %q: want {\"replica\":...,\"timeout_ms\":...}", kv.Value))
	}
	return read{replica: v.Replica, lease: clientv3.LeaseID(kv.Lease), timeout: time.Duration(v.TimeoutMS) * time.Millisecond}, true, nil
}

func (s *Store) remember(id entryID, info *leaseInfo) {
	s.mu.Lock()
	s.rememberLocked(id, info)
	s.mu.Unlock()
}

// rememberLocked records info, first forgetting the leases not renewed
// for their timeout when the map is full. Caller must hold s.mu.
func (s *Store) rememberLocked(id entryID, info *leaseInfo) {
	if _, ok := s.leases[id]; !ok && len(s.leases) >= maxCached {
		now := s.opts.Clock.Now()
		for k, old := range s.leases {
			if now.Sub(old.renewed) > old.timeout {
				delete(s.leases, k)
			}
		}
		for k := range s.leases { // still full: forget any
			if len(s.leases) < maxCached {
				break
			}
			delete(s.leases, k)
		}
	}
	s.leases[id] = info
}

// forget drops the entry's lease if it is still lease.
func (s *Store) forget(id entryID, lease clientv3.LeaseID) {
	s.mu.Lock()
	if info, ok := s.leases[id]; ok && info.id == lease {
		delete(s.leases, id)
	}
	s.mu.Unlock()
}

var _ affinity.Store = (*Store)(nil)
