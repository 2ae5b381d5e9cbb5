package monitor

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

const (
	// clientShards spreads the per-client counters over this many locks.
	clientShards = 32
	// maxClientsPerShard bounds the clients tracked (clientShards times
	// this); calls of clients beyond it are counted in the totals only.
	maxClientsPerShard = 2048
	// idleWindows is after how many report windows without a call a client
	// is forgotten.
	idleWindows = 3
)

// clientTable counts calls per bound client. The hot path (count) takes one
// shard lock for a map lookup and then adds atomically; it allocates only
// the first time a client is seen. Safe for concurrent use.
type clientTable struct {
	shards [clientShards]clientShard
}

type clientShard struct {
	mu sync.Mutex
	m  map[string]*clientCount
	_  [48]byte // keep shards on separate cache lines
}

type clientCount struct {
	calls atomic.Uint64
	// idle counts report windows without a call. Guarded by the shard lock.
	idle int
}

func newClientTable() *clientTable {
	t := &clientTable{}
	for i := range t.shards {
		t.shards[i].m = make(map[string]*clientCount)
	}
	return t
}

// shardOf hashes id with FNV-1a.
func shardOf(id string) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % clientShards)
}

// count adds one call of client id.
func (t *clientTable) count(id string) {
	s := &t.shards[shardOf(id)]
	s.mu.Lock()
	c := s.m[id]
	if c == nil {
		if len(s.m) >= maxClientsPerShard {
			s.mu.Unlock()
			return
		}
		c = &clientCount{}
		s.m[id] = c
	}
	s.mu.Unlock()
	c.calls.Add(1)
}

// window closes a report window of the given length in seconds: it returns
// every client that called in it with its rate, busiest first, resets the
// counts and forgets clients idle for idleWindows windows.
func (t *clientTable) window(seconds float64) []protocol.ClientRate {
	var out []protocol.ClientRate
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for id, c := range s.m {
			n := c.calls.Swap(0)
			if n == 0 {
				c.idle++
				if c.idle >= idleWindows {
					delete(s.m, id)
				}
				continue
			}
			c.idle = 0
			out = append(out, protocol.ClientRate{ID: id, Rate: float64(n) / seconds})
		}
		s.mu.Unlock()
	}
	sortBusiestFirst(out)
	return out
}

// sortBusiestFirst orders rates by descending rate, then by id so that
// reports and choices are deterministic.
func sortBusiestFirst(rates []protocol.ClientRate) {
	slices.SortFunc(rates, func(a, b protocol.ClientRate) int {
		switch {
		case a.Rate > b.Rate:
			return -1
		case a.Rate < b.Rate:
			return 1
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
}
