package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Watch implements store.Store on an etcd watch. The start is checked
// first, by a read at fromRev (which fails on a compacted revision just as
// the watch would); fromRev 0 is the revision after the store's current
// one, read then, so that no change after Watch returns is missed. The
// watch requires a leader: a member cut off from its cluster ends it with
// an error rather than going silent. Every end of the watch other than ctx
// or Close is a last response with an error: a compaction (the client
// resumed a broken stream from a revision no longer kept) wraps
// store.ErrCompacted; callers list again and watch from the list's
// revision + 1.
func (s *Store) Watch(ctx context.Context, prefix string, fromRev int64) (<-chan store.WatchResponse, error) {
	rctx, cancel, err := s.reqCtx(ctx)
	if err != nil {
		return nil, err
	}
	var opts []clientv3.OpOption
	if fromRev > 0 {
		opts = append(opts, clientv3.WithRev(fromRev))
	}
	start := time.Now()
	resp, err := s.cli.Get(rctx, s.opts.Prefix+schemaKey, append(opts, clientv3.WithKeysOnly())...)
	cancel()
	s.done(ctx, opWatchOpen, start, err)
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return nil, fmt.Errorf("%w: etcd at %s: watch from revision %d: %v", store.ErrCompacted, s.endpoints, fromRev, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		// Not written yet: the watch waits for it.
	case err != nil:
		return nil, s.wrap("watch", prefix, err)
	case fromRev == 0:
		fromRev = resp.Header.Revision + 1
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	s.watches.Add(1)
	resume := s.resumingLocked(fromRev)
	s.mu.Unlock()
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	stop := context.AfterFunc(s.stopCtx, wcancel)
	wch := s.cli.Watch(wctx, s.kvPrefix+prefix, clientv3.WithPrefix(), clientv3.WithRev(fromRev))
	s.health.watching(wctx, true)
	ch := make(chan store.WatchResponse)
	go func() {
		defer s.watches.Done()
		defer close(ch)
		defer stop()
		defer wcancel()
		defer s.health.watching(wctx, false)
		defer s.resumed(resume)
		s.feed(wctx, wch, ch, fromRev, resume)
	}()
	return ch, nil
}

// feed turns etcd's responses into one store.WatchResponse per revision
// until ctx ends; an etcd watch that ends otherwise is a last response with
// the error. It keeps *resume at the revision the etcd client would resume
// the watch from (lowest.go).
func (s *Store) feed(ctx context.Context, wch clientv3.WatchChan, ch chan<- store.WatchResponse, next int64, resume *int64) {
	send := func(r store.WatchResponse) bool {
		select {
		case ch <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		var (
			wr clientv3.WatchResponse
			ok bool
		)
		select {
		case wr, ok = <-wch:
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil {
			return
		}
		if !ok {
			send(store.WatchResponse{Rev: next, Err: fmt.Errorf("store: etcd at %s: watch ended without a reason at revision %d", s.endpoints, next)})
			return
		}
		if wr.CompactRevision != 0 {
			send(store.WatchResponse{Rev: next, Err: fmt.Errorf("%w: etcd at %s: watch at revision %d, history kept from %d", store.ErrCompacted, s.endpoints, next, wr.CompactRevision)})
			return
		}
		if err := wr.Err(); err != nil {
			if unreachable(err) {
				err = &unavailableError{err}
			}
			send(store.WatchResponse{Rev: next, Err: fmt.Errorf("store: etcd at %s: watch at revision %d: %w", s.endpoints, next, err)})
			return
		}
		s.health.delivered(wr.Header.Revision, time.Now())
		s.advance(resume, wr)
		// One etcd response may hold several revisions; the events of
		// one revision are never split across responses.
		var cur store.WatchResponse
		for _, ev := range wr.Events {
			e := store.Event{Type: store.EventPut, KV: s.kv(ev.Kv)}
			if ev.Type == clientv3.EventTypeDelete {
				e = store.Event{Type: store.EventDelete, KV: store.KV{Key: e.KV.Key, ModRev: ev.Kv.ModRevision}}
			}
			if cur.Rev != 0 && e.KV.ModRev != cur.Rev {
				if !send(cur) {
					return
				}
				cur = store.WatchResponse{}
			}
			cur.Rev = e.KV.ModRev
			cur.Events = append(cur.Events, e)
		}
		if cur.Rev != 0 {
			if !send(cur) {
				return
			}
			next = cur.Rev + 1
		}
	}
}
