// Package affinity is a group's session table (Chen et al. §III, the
// switch's session table; docs/affinity.md): the compiled affinity rules,
// the client-activated entries, and the routing decision a front door
// asks for before it lets the strategy pick.
//
//   - single-call: no entry; the strategy picks.
//   - singleton: the key's replica is the first of the live replicas in
//     rendezvous (highest random weight) order of hash(group, rule, key,
//     replica id): the order is the failover ranking, so every instance
//     of a cluster agrees without sharing state.
//   - client-activated: an entry (rule, key) → replica made when the
//     object is created (HTTP: a 201 whose Location path matches the
//     rule, or the rule's cookie set by the replica; TCP: the client's
//     first connection), renewed by every call (TCP: kept while a
//     connection is open), expired after the rule's timeout idle, bounded
//     per rule by an LRU (hashicorp/golang-lru/v2, not its expirable
//     variant: idle expiry runs on the clock passed in). When the entry's
//     replica is gone the call gets Gone and the entry is dropped.
//
// The Table and the rules are pure (no I/O, callers pass the time); the
// Router, built per snapshot over the group's live replicas, is what the
// front doors call; a Store keeps entries cluster-wide (etcd, on a lease
// of the rule's timeout rounded up to whole seconds, at least 2 s,
// renewed at most once per timeout/3).
//
// The exported surface other packages use:
//
//	func Compile(proto string, rules []protocol.AffinityRule) (*Rules, error) // *protocol.FieldError ("affinity[1].match", ...)
//	func NewTable(rules *Rules) *Table
//	func (t *Table) List(after string, limit int, now time.Time) protocol.SessionList
//	func (t *Table) Stats() Stats // entries by kind, created, expired, evicted, gone
//	type Store interface {
//		Put(ctx context.Context, rule int, key, replica string, ttl time.Duration) error
//		Renew(ctx context.Context, rule int, key string) error
//		Get(ctx context.Context, rule int, key string) (replica string, ok bool, err error)
//		Delete(ctx context.Context, rule int, key string) error
//	}
//	func (t *Table) SetStore(s Store) // cluster mode; nil: this instance only
//	func (t *Table) Expire(now time.Time) int // run from the group's loop
//	type Router struct{ ... }  // implements frontdoor.Affinity, and routes HTTP calls
//	func NewRouter(t *Table, group string, members []Member, cluster bool, now func() time.Time) *Router
//	func (r *Router) RouteHTTP(req *http.Request) frontdoor.AffinityDecision
//	func (r *Router) Answered(req *http.Request, d frontdoor.AffinityDecision, replica string, status int, h http.Header)
//
// Usage (the balancer, per group):
//
//	rules, err := affinity.Compile(g.Protocol, g.Affinity) // at validation
//	table := affinity.NewTable(rules)                      // kept while the rules stay Equal
//	table.Expire(now)                                      // from the group's loop
//	snap.Affinity = affinity.NewRouter(table, g.Name, members, cluster, now) // per snapshot
//
// Compile and the matching of calls to rules live in package rules
// (re-exported here), which imports no front door, so that the registry
// validates with it.
//
// Draining: a draining replica leaves the singleton ranking (its keys
// move to their next replica), while client-activated entries on it stay
// until they expire or the replica is removed.
package affinity
