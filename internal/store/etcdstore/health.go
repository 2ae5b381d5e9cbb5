package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// etcd's reachability. Every request's outcome tells it: a success means
// reachable, a failure that says etcd could not answer (a timeout, no
// connection, no leader) means unreachable. So that an idle instance
// notices too, the store checks every ProbeInterval with one cheap
// linearizable read (the count of the schema key, which needs a quorum),
// bounded by min(DialTimeout, 2s): an etcd that stops answering is known
// unreachable within about ProbeInterval + 2s, and reachable again within
// ProbeInterval of its return. The same check measures the watch lag: the
// revision it read is one etcd has committed, and the store asks its
// watches for a progress notification; the lag is the time from the check
// to the first watch response at or past that revision.

// maxProbeTimeout bounds one reachability check.
const maxProbeTimeout = 2 * time.Second

// health is what the store knows of etcd's reachability and of its
// watches' lag. Safe for concurrent use.
type health struct {
	log       *slog.Logger
	endpoints string

	mu sync.Mutex
	// down is the failure that made etcd unreachable (nil: reachable),
	// since when it was first seen.
	down  error
	since time.Time
	// pendingRev is a revision a check read that no watch has delivered
	// yet (0: none), read at pendingAt; lastLag is the last measured lag.
	pendingRev int64
	pendingAt  time.Time
	lastLag    time.Duration
	// watches are the contexts of the open watches (for progress
	// requests).
	watches map[context.Context]struct{}
}

// record notes a request's outcome at now: err nil is reachable, an
// unreachable error is not; other errors tell nothing. A change is logged.
func (h *health) record(err error, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		if h.down != nil {
			h.log.Info("etcd answers again", "etcd", h.endpoints, "unreachable_for", now.Sub(h.since).Round(time.Millisecond).String())
		}
		h.down = nil
	case unreachable(err):
		if h.down == nil {
			h.since = now
			h.log.Warn("etcd cannot be reached: serving from memory, refusing admin writes until it answers", "etcd", h.endpoints, "err", err)
		}
		h.down = err
	}
}

// unreachable tells whether err says etcd could not answer.
func unreachable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	for _, e := range []error{rpctypes.ErrNoLeader, rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrLeaderChanged, rpctypes.ErrGRPCNoLeader, rpctypes.ErrGRPCTimeout} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// unavailableError marks an error that says etcd could not answer: it
// reads as the error and also wraps store.ErrUnavailable.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{e.err, store.ErrUnavailable} }

// Unreachable implements store.Reachability: nil while etcd answers,
// else an error wrapping store.ErrUnavailable naming etcd, its endpoints,
// since when it has not answered and the last failure.
func (s *Store) Unreachable() error {
	s.health.mu.Lock()
	down, since := s.health.down, s.health.since
	s.health.mu.Unlock()
	if down == nil {
		return nil
	}
	return fmt.Errorf("%w: etcd at %s has not answered since %s: %w", store.ErrUnavailable, s.endpoints, since.UTC().Format(time.RFC3339), down)
}

// checked notes that etcd had committed revision rev at at, for the
// watch lag; an older revision not yet delivered stays (so the lag
// grows while a watch is stuck).
func (h *health) checked(rev int64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watches) > 0 && h.pendingRev == 0 {
		h.pendingRev, h.pendingAt = rev, at
	}
}

// delivered notes a watch response at revision rev (its header's) at now.
func (h *health) delivered(rev int64, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pendingRev != 0 && rev >= h.pendingRev {
		h.lastLag = now.Sub(h.pendingAt)
		h.pendingRev = 0
	}
}

// lag is the watch lag at now: the last measured one, or longer while a
// checked revision waits to be delivered; 0 without watches.
func (h *health) lag(now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watches) == 0 {
		return 0
	}
	if h.pendingRev != 0 && now.Sub(h.pendingAt) > h.lastLag {
		return now.Sub(h.pendingAt)
	}
	return h.lastLag
}

// watching adds (or, with open false, removes) a watch's context.
func (h *health) watching(ctx context.Context, open bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watches == nil {
		h.watches = map[context.Context]struct{}{}
	}
	if open {
		h.watches[ctx] = struct{}{}
		return
	}
	delete(h.watches, ctx)
	if len(h.watches) == 0 {
		h.pendingRev, h.lastLag = 0, 0
	}
}

// probeLoop checks etcd every ProbeInterval until Close.
func (s *Store) probeLoop() {
	defer s.watches.Done()
	t := time.NewTicker(s.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopCtx.Done():
			return
		case <-t.C:
		}
		s.probe()
	}
}

// probe makes one check: a linearizable count of the schema key, then a
// progress request to every open watch.
func (s *Store) probe() {
	ctx, cancel := context.WithTimeout(s.stopCtx, min(s.opts.DialTimeout, maxProbeTimeout))
	defer cancel()
	start := time.Now()
	resp, err := s.cli.Get(ctx, s.probeKey, clientv3.WithCountOnly())
	if s.stopCtx.Err() != nil {
		return
	}
	s.health.record(err, time.Now())
	if err != nil {
		return
	}
	s.health.checked(resp.Header.Revision, start)
	s.health.mu.Lock()
	ctxs := make([]context.Context, 0, len(s.health.watches))
	for c := range s.health.watches {
		ctxs = append(ctxs, c)
	}
	s.health.mu.Unlock()
	for _, c := range ctxs {
		// A context derived from the watch's keeps its stream's key.
		pctx, pcancel := context.WithTimeout(c, min(s.opts.DialTimeout, maxProbeTimeout))
		_ = s.cli.RequestProgress(pctx) // a failure shows as lag
		pcancel()
	}
}
