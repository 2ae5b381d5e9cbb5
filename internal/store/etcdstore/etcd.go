package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Store is store.Store on etcd. Every read is linearizable (it sees every
// write committed before it began, by any instance). Every request is
// bounded by the dial timeout, or the caller's earlier deadline. Safe for
// concurrent use.
type Store struct {
	cli       *clientv3.Client
	opts      Options
	kvPrefix  string // opts.Prefix + "kv/"
	endpoints string // for errors
	health    health
	probeKey  string // the key the reachability check reads (health.go)

	mu      sync.Mutex
	closed  bool
	stop    context.CancelFunc // ends every watch
	stopCtx context.Context
	watches sync.WaitGroup
	resumes map[*int64]struct{} // each open watch's resume revision (lowest.go)
}

// Open connects to etcd and checks (or, on an empty prefix, writes) the
// schema version. It fails within opts.DialTimeout when etcd cannot be
// reached, with an error naming etcd and its endpoints; on a prefix
// written by an incompatible schema it fails saying so.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, err := clientConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Store{
		opts:      opts,
		kvPrefix:  opts.Prefix + "kv/",
		endpoints: strings.Join(opts.Endpoints, ","),
	}
	s.health.log, s.health.endpoints = opts.Logger, s.endpoints
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, s.wrap("connect", "", err)
	}
	s.cli = cli
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	if err := s.checkSchema(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.probeKey = opts.Prefix + schemaKey
	s.watches.Add(1)
	go s.probeLoop()
	if opts.Metrics != nil {
		opts.Metrics.st.Store(s)
	}
	return s, nil
}

// clientConfig is the etcd client's config for opts (defaults applied).
func clientConfig(opts Options) (clientv3.Config, error) {
	cfg := clientv3.Config{
		Endpoints:   opts.Endpoints,
		DialTimeout: opts.DialTimeout,
		Username:    opts.Username,
		Password:    opts.Password,
		Logger:      zap.NewNop(),
	}
	if opts.TLS != nil {
		c, err := certs.NewClient(*opts.TLS)
		if err != nil {
			return cfg, fmt.Errorf("etcdstore: tls: %w", err)
		}
		cfg.TLS = c.Config()
	}
	return cfg, nil
}

// Prefix is where the store's keys are in etcd.
func (s *Store) Prefix() string { return s.opts.Prefix }

// Client is the store's etcd client (for tests and operations that go
// beyond store.Store, as compaction).
func (s *Store) Client() *clientv3.Client { return s.cli }

// reqCtx bounds a request by the dial timeout and ends it at Close.
func (s *Store) reqCtx(ctx context.Context) (context.Context, context.CancelFunc, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, nil, store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DialTimeout)
	stop := context.AfterFunc(s.stopCtx, cancel)
	return ctx, func() { stop(); cancel() }, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	rctx, cancel, err := s.reqCtx(ctx)
	if err != nil {
		return store.KV{}, err
	}
	defer cancel()
	start := time.Now()
	resp, err := s.cli.Get(rctx, s.kvPrefix+key)
	s.done(ctx, opGet, start, err)
	if err != nil {
		return store.KV{}, s.wrap("get", key, err)
	}
	if len(resp.Kvs) == 0 {
		return store.KV{}, fmt.Errorf("%w: %q", store.ErrNotFound, key)
	}
	return s.kv(resp.Kvs[0]), nil
}

// List implements store.Store. etcd returns the keys in byte order.
func (s *Store) List(ctx context.Context, prefix string) ([]store.KV, int64, error) {
	rctx, cancel, err := s.reqCtx(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer cancel()
	start := time.Now()
	resp, err := s.cli.Get(rctx, s.kvPrefix+prefix, clientv3.WithPrefix())
	s.done(ctx, opList, start, err)
	if err != nil {
		return nil, 0, s.wrap("list", prefix, err)
	}
	kvs := make([]store.KV, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		kvs = append(kvs, s.kv(kv))
	}
	return kvs, resp.Header.Revision, nil
}

// Txn implements store.Store as one etcd transaction: the conditions as
// compares, the ops on success, and on failure a read of every compared
// key. An error other than a refused transaction (a timeout, a leader
// lost) leaves it unknown whether the transaction applied: etcd may
// commit a request whose answer is lost. Callers that must know read
// again, or condition the retry on the revision they read.
func (s *Store) Txn(ctx context.Context, conds []store.Cond, ops []store.Op) (bool, int64, []store.KV, error) {
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
	resp, err := s.cli.Txn(rctx).If(cmps...).Then(then...).Else(reads...).Commit()
	s.done(ctx, opTxn, start, err)
	if err != nil {
		return false, 0, nil, s.wrap("txn", "", err)
	}
	s.opts.Metrics.committed(conds, ops)
	if resp.Succeeded {
		return true, resp.Header.Revision, nil, nil
	}
	kvs := make([]store.KV, len(conds))
	for i, r := range resp.Responses {
		kvs[i] = store.KV{Key: conds[i].Key}
		if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			kvs[i] = s.kv(rr.Kvs[0])
		}
	}
	return false, resp.Header.Revision, kvs, nil
}

// txnOps translates a transaction's conditions and ops into etcd's: the
// compares, the ops on success, and a read of every compared key (for the
// failure branch).
func (s *Store) txnOps(conds []store.Cond, ops []store.Op) (cmps []clientv3.Cmp, then, reads []clientv3.Op) {
	cmps = make([]clientv3.Cmp, 0, len(conds))
	for _, c := range conds {
		k := s.kvPrefix + c.Key
		switch c.Target {
		case store.TargetValue:
			cmps = append(cmps, clientv3.Compare(clientv3.Value(k), "=", string(c.Value)))
		case store.TargetModRev:
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", c.Rev))
		default: // store.TargetCreateRev; CheckTxn refused others
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", c.Rev))
		}
		reads = append(reads, clientv3.OpGet(k))
	}
	then = make([]clientv3.Op, 0, len(ops))
	for _, op := range ops {
		k := s.kvPrefix + op.Key
		switch op.Kind {
		case store.OpPut:
			then = append(then, clientv3.OpPut(k, string(op.Value)))
		case store.OpDelete:
			then = append(then, clientv3.OpDelete(k))
		default: // store.OpDeletePrefix
			then = append(then, clientv3.OpDelete(k, clientv3.WithPrefix()))
		}
	}
	return cmps, then, reads
}

// kv converts etcd's key/value, stripping the prefix. A present key's
// value is never nil.
func (s *Store) kv(kv *mvccpb.KeyValue) store.KV {
	v := kv.Value
	if v == nil {
		v = []byte{}
	}
	return store.KV{
		Key:       strings.TrimPrefix(string(kv.Key), s.kvPrefix),
		Value:     v,
		ModRev:    kv.ModRevision,
		CreateRev: kv.CreateRevision,
	}
}

// Close implements store.Store: it ends every watch, waits for their
// goroutines and closes the client. Closing twice is not an error.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
	s.watches.Wait()
	if s.cli == nil {
		return nil
	}
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return s.wrap("close", "", err)
	}
	return nil
}

// done records a request of op begun at start, for a caller's ctx, that
// ended with err: its latency, and what it tells of etcd's reachability
// (nothing when the caller's own context ended it: a caller's short
// deadline says nothing of etcd).
func (s *Store) done(ctx context.Context, op string, start time.Time, err error) {
	now := time.Now()
	s.opts.Metrics.observe(op, now.Sub(start))
	if err != nil && ctx.Err() != nil {
		return
	}
	s.health.record(err, now)
}

// wrap names etcd, its endpoints, the operation and the key of an error,
// maps a request ended by Close to store.ErrClosed, and marks an error
// that says etcd could not answer as store.ErrUnavailable.
func (s *Store) wrap(op, key string, err error) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("store: etcd %s: %w", op, store.ErrClosed)
	}
	if unreachable(err) {
		err = &unavailableError{err}
	}
	if key != "" {
		return fmt.Errorf("store: etcd at %s: %s %q: %w", s.endpoints, op, key, err)
	}
	return fmt.Errorf("store: etcd at %s: %s: %w", s.endpoints, op, err)
}
