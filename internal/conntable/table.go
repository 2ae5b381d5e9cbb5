// Package conntable is a tcp group's connection table (the switch's TCP
// connection table of Chen et al.'s .NET Remoting dispatcher): every
// connection the front door proxies, with its client, replica, bytes each
// way and age. The group owns one table for its whole life, so that it
// outlives front-door swaps; the front door adds an entry once it has
// connected to the replica, updates the entry's counters between copied
// chunks (atomics, no lock), and removes it when the connection ends.
// The admin API lists it page by page, the metrics read its totals, and
// the balancer closes entries through it (drain timeout).
//
// The table never reads the clock: callers pass the time.
//
//	t := conntable.New()
//	e := t.Add("10.0.0.7:51234", "r1", "10.0.1.5:7000", now, closeConn)
//	e.AddIn(n, now) // after each chunk copied from the client
//	...
//	t.Remove(e)
package conntable

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Table is a group's connection table. Safe for concurrent use.
type Table struct {
	mu     sync.Mutex
	nextID uint64
	open   map[uint64]*Entry
	// totals are the per-replica totals, closed connections included.
	totals map[string]*ReplicaTotals
	// refused counts connections refused or closed before they were
	// proxied, by reason (Refuse*).
	refused map[string]uint64
}

// Reasons a connection is refused (Table.Refuse).
const (
	RefuseMaxConnections = "max_connections" // tcp.max_connections reached
	RefuseReplicaLimit   = "replica_limit"   // every candidate at max_inflight
	RefuseNoReplica      = "no_replica"      // nothing can serve, or every dial failed
	RefuseProxyHeader    = "proxy_header"    // malformed or missing PROXY header from a trusted peer
	RefuseAffinity       = "affinity"        // the session's replica is gone or unavailable here
	RefuseDraining       = "draining"        // the front door is shutting down
)

// ReplicaTotals are one replica's counters: connections open now, every
// connection accepted, and the bytes each way of connections that have
// ended (Totals adds those of the open ones).
type ReplicaTotals struct {
	Open     int
	Accepted uint64
	BytesIn  uint64
	BytesOut uint64
}

// Entry is one proxied connection. Its immutable fields are set by Add;
// the counters are updated atomically by the copying goroutines.
type Entry struct {
	ID      uint64
	Client  string
	Replica string
	Address string
	Opened  time.Time

	in, out atomic.Uint64
	last    atomic.Int64 // unix nanoseconds of the last byte either way
	closed  atomic.Bool
	closer  func()
}

// New returns an empty table.
func New() *Table {
	return &Table{open: map[uint64]*Entry{}, totals: map[string]*ReplicaTotals{}, refused: map[string]uint64{}}
}

// Refuse counts a connection refused for reason (Refuse*).
func (t *Table) Refuse(reason string) {
	t.mu.Lock()
	t.refused[reason]++
	t.mu.Unlock()
}

// Refusals returns the refused connections by reason.
func (t *Table) Refusals() map[string]uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]uint64, len(t.refused))
	for r, n := range t.refused {
		out[r] = n
	}
	return out
}

// Add records a connection from client (host:port) proxied to replica at
// address, opened at now. closer, when not nil, closes the connection
// (Entry.Close calls it once).
func (t *Table) Add(client, replica, address string, now time.Time, closer func()) *Entry {
	e := &Entry{Client: client, Replica: replica, Address: address, Opened: now, closer: closer}
	e.last.Store(now.UnixNano())
	t.mu.Lock()
	t.nextID++
	e.ID = t.nextID
	t.open[e.ID] = e
	rt := t.totalsLocked(replica)
	rt.Open++
	rt.Accepted++
	t.mu.Unlock()
	return e
}

// Remove drops e from the table, adding its bytes to its replica's
// totals. Removing an entry twice is harmless.
func (t *Table) Remove(e *Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.open[e.ID]; !ok {
		return
	}
	delete(t.open, e.ID)
	rt := t.totalsLocked(e.Replica)
	rt.Open--
	rt.BytesIn += e.in.Load()
	rt.BytesOut += e.out.Load()
}

// totalsLocked returns replica's totals, made when missing. Caller holds
// t.mu.
func (t *Table) totalsLocked(replica string) *ReplicaTotals {
	rt := t.totals[replica]
	if rt == nil {
		rt = &ReplicaTotals{}
		t.totals[replica] = rt
	}
	return rt
}

// Forget drops the totals of a replica that left the group and has no
// connection open.
func (t *Table) Forget(replica string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rt := t.totals[replica]; rt != nil && rt.Open == 0 {
		delete(t.totals, replica)
	}
}

// AddIn counts n bytes copied from the client to the replica at now.
func (e *Entry) AddIn(n int64, now time.Time) {
	if n > 0 {
		e.in.Add(uint64(n))
		e.last.Store(now.UnixNano())
	}
}

// AddOut counts n bytes copied from the replica to the client at now.
func (e *Entry) AddOut(n int64, now time.Time) {
	if n > 0 {
		e.out.Add(uint64(n))
		e.last.Store(now.UnixNano())
	}
}

// BytesIn and BytesOut are the bytes copied so far each way.
func (e *Entry) BytesIn() uint64  { return e.in.Load() }
func (e *Entry) BytesOut() uint64 { return e.out.Load() }

// LastActive is when the last byte went either way (Opened at first).
func (e *Entry) LastActive() time.Time { return time.Unix(0, e.last.Load()) }

// Idle is how long the connection has carried no byte, at now.
func (e *Entry) Idle(now time.Time) time.Duration { return max(now.Sub(e.LastActive()), 0) }

// Age is the connection's age at now.
func (e *Entry) Age(now time.Time) time.Duration { return max(now.Sub(e.Opened), 0) }

// Close closes the connection through the closer given to Add, once; it
// reports whether this call closed it.
func (e *Entry) Close() bool {
	if !e.closed.CompareAndSwap(false, true) {
		return false
	}
	if e.closer != nil {
		e.closer()
	}
	return true
}

// Row is e as the admin API shows it at now.
func (e *Entry) Row(now time.Time) protocol.Connection {
	return protocol.Connection{
		ID: e.ID, Client: e.Client, Replica: e.Replica, Address: e.Address,
		BytesIn: e.in.Load(), BytesOut: e.out.Load(), Opened: e.Opened.UTC(),
		AgeMS: e.Age(now).Milliseconds(), IdleMS: e.Idle(now).Milliseconds(),
	}
}

// Len is the number of open connections.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// OpenTo is the number of connections open to replica.
func (t *Table) OpenTo(replica string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rt := t.totals[replica]; rt != nil {
		return rt.Open
	}
	return 0
}

// Entries returns the open entries in id order (a copy of the list; the
// entries themselves are shared).
func (t *Table) Entries() []*Entry {
	t.mu.Lock()
	out := make([]*Entry, 0, len(t.open))
	for _, e := range t.open {
		out = append(out, e)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b *Entry) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// List returns the page of at most limit connections with ids above
// after, in id order, at now. limit below 1 means 1.
func (t *Table) List(after uint64, limit int, now time.Time) protocol.ConnectionList {
	limit = max(limit, 1)
	t.mu.Lock()
	total := len(t.open)
	page := make([]*Entry, 0, min(limit+1, total))
	for id, e := range t.open {
		if id > after {
			page = append(page, e)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(page, func(a, b *Entry) int { return cmp.Compare(a.ID, b.ID) })
	list := protocol.ConnectionList{Connections: make([]protocol.Connection, 0, min(limit, len(page))), Total: total}
	for i, e := range page {
		if i == limit {
			list.Next = page[i-1].ID
			break
		}
		list.Connections = append(list.Connections, e.Row(now))
	}
	return list
}

// Totals returns each replica's totals, the bytes of open connections
// included.
func (t *Table) Totals() map[string]ReplicaTotals {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]ReplicaTotals, len(t.totals))
	for id, rt := range t.totals {
		out[id] = *rt
	}
	for _, e := range t.open {
		rt := out[e.Replica]
		rt.BytesIn += e.in.Load()
		rt.BytesOut += e.out.Load()
		out[e.Replica] = rt
	}
	return out
}
