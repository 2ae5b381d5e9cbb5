package etcdstore

import (
	clientv3 "go.etcd.io/etcd/client/v3"
)

// What the store's watches need of etcd's history, for compaction
// (package compaction). The etcd client resumes a broken watch stream
// from the revision after the last event it delivered, or after the
// revision of the last progress notification (the store asks for one at
// every check, health.go): that revision must still be in etcd's history,
// or the watch ends with store.ErrCompacted and its caller lists again.

// resumingLocked registers a new watch's resume revision, from. Caller
// must hold s.mu.
func (s *Store) resumingLocked(from int64) *int64 {
	if s.resumes == nil {
		s.resumes = map[*int64]struct{}{}
	}
	r := new(from)
	s.resumes[r] = struct{}{}
	return r
}

// resumed forgets an ended watch's resume revision.
func (s *Store) resumed(r *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.resumes, r)
}

// advance moves a watch's resume revision past what wr delivered, as the
// etcd client does.
func (s *Store) advance(r *int64, wr clientv3.WatchResponse) {
	next := int64(0)
	switch {
	case len(wr.Events) > 0:
		next = wr.Events[len(wr.Events)-1].Kv.ModRevision + 1
	case wr.IsProgressNotify():
		next = wr.Header.Revision + 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if next > *r {
		*r = next
	}
}

// LowestNeeded returns the lowest revision the store's open watches would
// read from etcd's history if their streams broke now, and false when
// none is open. Compacting etcd at or below it costs them nothing;
// compacting above it may end them with store.ErrCompacted (their callers
// list again).
func (s *Store) LowestNeeded() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var low int64
	found := false
	for r := range s.resumes {
		if !found || *r < low {
			low, found = *r, true
		}
	}
	return low, found
}
