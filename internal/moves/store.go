package moves

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
)

// Defaults of Options.
const (
	DefaultPrefix = "/fulcrum/"
	// LookupTimeout bounds Lookup: a front door holding a rebinding
	// client waits this long at most for its move.
	LookupTimeout = 100 * time.Millisecond
)

// Options of a Store.
type Options struct {
	// Client is the etcd client (required). The Store does not close it.
	Client *clientv3.Client
	// Prefix is the deployment's etcd prefix; default DefaultPrefix. It
	// must start and end with "/". The moves live under <prefix>moves/.
	Prefix string
	// LookupTimeout bounds each Lookup; default LookupTimeout.
	LookupTimeout time.Duration
	// Clock reads the time to tell how much of a lease is left; default
	// the system clock.
	Clock clock.Clock
}

func (o Options) withDefaults() (Options, error) {
	if o.Client == nil {
		return o, errors.New("moves: client: none given, want an etcd client")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return o, fmt.Errorf("moves: prefix %q: must start and end with /", o.Prefix)
	}
	if o.LookupTimeout == 0 {
		o.LookupTimeout = LookupTimeout
	}
	if o.LookupTimeout < 0 {
		return o, fmt.Errorf("moves: lookup timeout %v: must be positive", o.LookupTimeout)
	}
	o.Clock = clock.Or(o.Clock)
	return o, nil
}

// Store reads and writes the planned moves of a deployment in etcd. Safe
// for concurrent use.
type Store struct {
	opts Options
	cli  *clientv3.Client

	grant sync.Mutex // serialises lease grants, so concurrent commits share one

	mu     sync.Mutex
	leases map[time.Duration]lease // by TTL
	ledger ledger
}

// lease is a lease a Store granted, and when it ends at the earliest.
type lease struct {
	id  clientv3.LeaseID
	end time.Time
}

// New returns a Store on opts.Client.
func New(opts Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Store{opts: o, cli: o.Client, leases: map[time.Duration]lease{}, ledger: ledger{}}, nil
}

// Commit writes group's planned moves, each on a lease that keeps it for
// at least life (the analyzer's move expiry: MoveExpiryIntervals report
// intervals) and at most twice that, rounded up to whole seconds. Every
// transaction is fenced: when fence no longer holds nothing more is
// written and the error wraps leader.ErrDeposed.
//
// moves is the group's whole set of pending moves (groupcore's
// Step.Planned), handed over at every step: the moves this Store already
// committed in fence's term, with the same target, on a lease not yet
// ended, are not written again, and the group's clients missing from
// moves are forgotten (their keys expire with their lease, or Completed
// deleted them). So a step that plans nothing new writes nothing; one that
// does writes one transaction per MovesPerTxn new moves, plus a lease grant
// at most once per life.
//
// The batch is split into transactions of at most MovesPerTxn moves; when
// one fails, the ones before it stay written (while the term held) and
// Commit returns the error. As with any etcd request, an error other than
// leader.ErrDeposed leaves it unknown whether the failing transaction
// applied; the next Commit with the same moves writes them again.
func (s *Store) Commit(ctx context.Context, fence leader.Fence, group string, life time.Duration, moves []Move) error {
	if err := checkMoves(group, life, moves); err != nil {
		return err
	}
	s.mu.Lock()
	due := s.ledger.due(group, fence.Term, moves, s.opts.Clock.Now())
	s.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	for _, part := range chunks(due, MovesPerTxn) {
		if err := s.commitPart(ctx, fence, group, life, part); err != nil {
			return err
		}
	}
	return nil
}

// commitPart writes at most MovesPerTxn moves in one fenced transaction,
// granting a new lease and trying once more if etcd no longer knows the
// cached one.
func (s *Store) commitPart(ctx context.Context, fence leader.Fence, group string, life time.Duration, part []Move) error {
	for attempt := 0; ; attempt++ {
		l, err := s.leaseFor(ctx, life)
		if err != nil {
			return fmt.Errorf("moves: group %q: commit %d moves: %w", group, len(part), err)
		}
		ops := make([]clientv3.Op, 0, len(part))
		for _, m := range part {
			v, err := encode(m, fence.Term)
			if err != nil {
				return err
			}
			ops = append(ops, clientv3.OpPut(Key(s.opts.Prefix, group, m.Client), string(v), clientv3.WithLease(l.id)))
		}
		_, err = fence.Txn(ctx, s.cli, nil, ops, nil)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && attempt == 0 {
			s.dropLease(l)
			continue
		}
		if err != nil {
			return fmt.Errorf("moves: group %q: commit %d moves: %w", group, len(part), err)
		}
		s.mu.Lock()
		s.ledger.record(group, fence.Term, part, l.end)
		s.mu.Unlock()
		return nil
	}
}

// leaseFor returns a lease with at least life left, granting one when the
// cached lease of the same TTL has less.
func (s *Store) leaseFor(ctx context.Context, life time.Duration) (lease, error) {
	ttl := leaseTTL(life)
	s.grant.Lock()
	defer s.grant.Unlock()
	s.mu.Lock()
	l, ok := s.leases[ttl]
	s.mu.Unlock()
	if ok && l.end.Sub(s.opts.Clock.Now()) >= life {
		return l, nil
	}
	// The lease ends TTL after etcd grants it, so at the earliest TTL
	// after the request was sent.
	start := s.opts.Clock.Now()
	resp, err := s.cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return lease{}, fmt.Errorf("grant a lease of %v: %w", ttl, err)
	}
	l = lease{id: resp.ID, end: start.Add(time.Duration(resp.TTL) * time.Second)}
	s.mu.Lock()
	s.leases[ttl] = l
	s.mu.Unlock()
	return l, nil
}

// dropLease forgets l when it is still the cached lease of its TTL.
func (s *Store) dropLease(l lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ttl, c := range s.leases {
		if c.id == l.id {
			delete(s.leases, ttl)
		}
	}
}

// Completed deletes client's move in group, its client having bound: one
// fenced transaction (an error wrapping leader.ErrDeposed when fence no
// longer holds). Deleting a move that is not there is not an error.
func (s *Store) Completed(ctx context.Context, fence leader.Fence, group, client string) error {
	if group == "" || client == "" {
		return fmt.Errorf("moves: completed: group %q, client %q: want both non-empty", group, client)
	}
	s.mu.Lock()
	s.ledger.forget(group, client)
	s.mu.Unlock()
	if _, err := fence.Txn(ctx, s.cli, nil, []clientv3.Op{clientv3.OpDelete(Key(s.opts.Prefix, group, client))}, nil); err != nil {
		return fmt.Errorf("moves: group %q: complete the move of client %q: %w", group, client, err)
	}
	return nil
}

// Lookup reads client's move in group: a linearizable read bounded to
// the Store's LookupTimeout (and by ctx). ok is false when there is no
// move, and when the read failed or timed out, or the value does not
// decode: err says which; the caller then picks as if there were no move.
func (s *Store) Lookup(ctx context.Context, group, client string) (to string, ok bool, err error) {
	r, ok, err := s.LookupRecord(ctx, group, client)
	return r.To, ok, err
}

// LookupRecord is Lookup returning the whole record: the target and the
// term of the leader that planned the move, among others.
func (s *Store) LookupRecord(ctx context.Context, group, client string) (r Record, ok bool, err error) {
	if group == "" || client == "" {
		return Record{}, false, fmt.Errorf("moves: lookup: group %q, client %q: want both non-empty", group, client)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.LookupTimeout)
	defer cancel()
	key := Key(s.opts.Prefix, group, client)
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return Record{}, false, fmt.Errorf("moves: look up the move of client %q in group %q (%s, bound to %v): %w", client, group, key, s.opts.LookupTimeout, err)
	}
	if len(resp.Kvs) == 0 {
		return Record{}, false, nil
	}
	r, err = Decode(key, resp.Kvs[0].Value)
	if err != nil {
		return Record{}, false, err
	}
	return r, true, nil
}

// LookupFor is Lookup for group in the shape of frontdoor.Snapshot's
// LookupMove: errors (etcd away, a value that does not decode) go to
// onErr when it is not nil and count as no move.
func (s *Store) LookupFor(group string, onErr func(error)) func(ctx context.Context, client string) (replicaID string, ok bool) {
	return func(ctx context.Context, client string) (string, bool) {
		to, ok, err := s.Lookup(ctx, group, client)
		if err != nil && onErr != nil {
			onErr(err)
		}
		return to, ok
	}
}
