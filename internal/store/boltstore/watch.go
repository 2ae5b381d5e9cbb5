package boltstore

import (
	"context"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Watch implements store.Store from the in-memory history: revisions
// committed before Open, or more than DefaultHistory revisions behind the
// newest, are compacted. One goroutine per watch feeds the channel; it
// ends with ctx or Close.
func (s *Store) Watch(ctx context.Context, prefix string, fromRev int64) (<-chan store.WatchResponse, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	if fromRev == 0 {
		fromRev = s.hist.last() + 1
	}
	if fromRev <= s.hist.compacted {
		compacted := s.hist.compacted
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: watch from revision %d, history kept from %d", store.ErrCompacted, fromRev, compacted+1)
	}
	s.watches.Add(1)
	s.mu.Unlock()
	ch := make(chan store.WatchResponse)
	go func() {
		defer s.watches.Done()
		defer close(ch)
		s.feed(ctx, ch, prefix, fromRev)
	}()
	return ch, nil
}

// feed sends the history from next on to ch, then each revision as it
// commits, until ctx ends, the store closes, or the watcher falls behind
// the kept history.
func (s *Store) feed(ctx context.Context, ch chan<- store.WatchResponse, prefix string, next int64) {
	for {
		s.mu.Lock()
		resps, ok := s.hist.since(next, prefix)
		compacted, newest, changed := s.hist.compacted, s.hist.last(), s.changed
		s.mu.Unlock()
		if !ok {
			err := fmt.Errorf("%w: the watcher fell behind at revision %d, history kept from %d", store.ErrCompacted, next, compacted+1)
			select {
			case ch <- store.WatchResponse{Rev: next, Err: err}:
			case <-ctx.Done():
			case <-s.done:
			}
			return
		}
		for _, r := range resps {
			select {
			case ch <- r:
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
		if newest >= next {
			next = newest + 1
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
	}
}
