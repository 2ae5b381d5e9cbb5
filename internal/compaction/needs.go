package compaction

import "sync"

// Needs are the watches of one instance whose lowest needed revision it
// publishes: each source says the lowest revision it would read from
// etcd's history, or false when it runs no watch now. The zero value is
// empty and ready. Safe for concurrent use.
type Needs struct {
	mu      sync.Mutex
	sources map[*source]struct{}
}

type source struct{ lowest func() (int64, bool) }

// Add adds a source (etcdstore.Store.LowestNeeded, say); the returned
// func removes it (call it when the source closes).
func (n *Needs) Add(lowest func() (int64, bool)) (remove func()) {
	s := &source{lowest: lowest}
	n.mu.Lock()
	if n.sources == nil {
		n.sources = map[*source]struct{}{}
	}
	n.sources[s] = struct{}{}
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		delete(n.sources, s)
		n.mu.Unlock()
	}
}

// AddPosition adds a source that counts in log positions (etcdlog.Log.
// LowestNeeded: positions are etcd revisions).
func (n *Needs) AddPosition(lowest func() (uint64, bool)) (remove func()) {
	return n.Add(func() (int64, bool) {
		p, ok := lowest()
		return int64(p), ok
	})
}

// Lowest is the lowest revision any source needs; false when none does.
func (n *Needs) Lowest() (int64, bool) {
	n.mu.Lock()
	fns := make([]func() (int64, bool), 0, len(n.sources))
	for s := range n.sources {
		fns = append(fns, s.lowest)
	}
	n.mu.Unlock()
	var low int64
	found := false
	for _, f := range fns {
		if r, ok := f(); ok && (!found || r < low) {
			low, found = r, true
		}
	}
	return low, found
}
