package affinity

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Member is a replica as the Router sees it: its id and its state in the
// snapshot the Router is built for.
type Member struct {
	ID    string
	State string
}

// Router routes a group's calls and connections by its affinity rules
// over one snapshot of the group's members. Build one per published
// snapshot (NewRouter); it implements frontdoor.Affinity for tcp groups
// and RouteHTTP/Answered for http groups. Safe for concurrent use.
//
// Which replicas count as live (docs/affinity.md):
//   - the singleton ranking runs over the active replicas; in cluster
//     mode also over those this instance has passively ejected, since
//     passive ejection is each instance's own: the key stays on its
//     replica and this instance answers 503 (or refuses the connection)
//     for it until the replica is readmitted. A draining replica leaves
//     the ranking: its singleton keys move to their next replica.
//   - a client-activated entry's replica is gone when it is no longer a
//     member or is down (in cluster mode: the leader's verdict) or, on a
//     single node, ejected. Entries on a draining replica stay until they
//     expire or the replica is removed: the front door sends their calls
//     to it.
type Router struct {
	table   *Table
	rules   *Rules
	group   string
	cluster bool
	now     func() time.Time
	// ranked are the replicas the singleton ranking runs over.
	ranked []string
	states map[string]string
}

// NewRouter returns the Router of table's rules over members; nil when
// table is nil or has no rules. cluster says whether the group runs in a
// cluster (passive ejection is then this instance's own, see Router). now
// is the balancer's clock.
func NewRouter(table *Table, group string, members []Member, cluster bool, now func() time.Time) *Router {
	if table == nil || table.rules.Len() == 0 {
		return nil
	}
	r := &Router{table: table, rules: table.rules, group: group, cluster: cluster, now: now, states: make(map[string]string, len(members))}
	for _, m := range members {
		r.states[m.ID] = m.State
		if m.State == protocol.StateActive || (cluster && m.State == protocol.StateEjected) {
			r.ranked = append(r.ranked, m.ID)
		}
	}
	return r
}

// Table is the router's table.
func (r *Router) Table() *Table { return r.table }

// gone: replica id can no longer serve its client-activated objects.
func (r *Router) gone(id string) bool {
	st, ok := r.states[id]
	return !ok || st == protocol.StateDown || (!r.cluster && st == protocol.StateEjected)
}

// Ranking is key's failover ranking under rule (the singleton order over
// the live replicas).
func (r *Router) Ranking(rule int, key string) []string {
	return Ranking(r.group, rule, key, r.ranked)
}

// route decides a call or connection that rule matched with key.
func (r *Router) route(ctx context.Context, rule Rule, key string) frontdoor.AffinityDecision {
	d := frontdoor.AffinityDecision{Rule: rule.Index, Kind: rule.Kind, Key: key}
	switch rule.Kind {
	case protocol.AffinitySingleton:
		d.Replica = Pick(r.group, rule.Index, key, r.ranked)
	case protocol.AffinityClientActivated:
		if rule.Cookie != "" && key == "" {
			return d // no cookie yet: the answer may set it
		}
		d.Replica, d.Gone = r.entry(ctx, rule, key)
	}
	return d
}

// entry looks up the client-activated object (rule, key): its replica
// ("" when there is no entry), or gone when that replica was lost (the
// entry is then dropped, here and in the Store).
func (r *Router) entry(ctx context.Context, rule Rule, key string) (replica string, gone bool) {
	now := r.now()
	replica, renew, ok := r.table.Touch(rule.Index, key, now)
	store := r.table.Store()
	if !ok && store != nil {
		ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
		defer cancel()
		if rep, found, err := store.Get(ctx, rule.Index, key); err == nil && found {
			replica, ok = rep, true
			r.table.Adopt(rule.Index, key, rep, now)
		}
	}
	if !ok {
		return "", false
	}
	if r.gone(replica) {
		r.table.Drop(rule.Index, key, true)
		if store != nil {
			ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
			defer cancel()
			_ = store.Delete(ctx, rule.Index, key) // best effort: the lease ends it otherwise
		}
		return replica, true
	}
	if renew && store != nil {
		ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
		defer cancel()
		_ = store.Renew(ctx, rule.Index, key) // best effort: a later call renews again
	}
	return replica, false
}

// created records a new object (rule, key) on replica, here and in the
// Store.
func (r *Router) created(ctx context.Context, rule Rule, key, replica string, open bool) {
	now := r.now()
	var made bool
	if open {
		made = r.table.Open(rule.Index, key, replica, now)
	} else {
		made = r.table.Create(rule.Index, key, replica, now)
	}
	if store := r.table.Store(); made && store != nil {
		ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
		defer cancel()
		_ = store.Put(ctx, rule.Index, key, replica, StoreTTL(rule.Timeout))
	}
}

// RouteConn implements frontdoor.Affinity: a tcp group's rule keyed by the
// client's IP (a singleton keys the whole group: key "").
func (r *Router) RouteConn(clientIP string) frontdoor.AffinityDecision {
	if r.rules.Proto() != protocol.ProtocolTCP || r.rules.Len() == 0 {
		return frontdoor.AffinityDecision{Rule: -1, Kind: protocol.AffinitySingleCall}
	}
	rule := r.rules.Rule(0)
	key := clientIP
	if rule.Kind == protocol.AffinitySingleton {
		key = ""
	}
	return r.route(context.Background(), rule, key)
}

// Opened implements frontdoor.Affinity: a client-activated object gets its
// entry (or one more open connection).
func (r *Router) Opened(d frontdoor.AffinityDecision, replica string) {
	if d.Kind != protocol.AffinityClientActivated || d.Rule < 0 || d.Rule >= r.rules.Len() {
		return
	}
	r.created(context.Background(), r.rules.Rule(d.Rule), d.Key, replica, true)
}

// Closed implements frontdoor.Affinity.
func (r *Router) Closed(d frontdoor.AffinityDecision, replica string) {
	if d.Kind != protocol.AffinityClientActivated || d.Rule < 0 {
		return
	}
	r.table.Close(d.Rule, d.Key, replica, r.now())
}

// RouteHTTP decides an HTTP call (its method, host, path and cookies) by
// the group's rules. Replica "" lets the strategy pick; Gone means the
// object was lost with its replica (answer 410).
func (r *Router) RouteHTTP(req *http.Request) frontdoor.AffinityDecision {
	rule, key, ok := r.rules.Match(req)
	if !ok {
		return frontdoor.AffinityDecision{Rule: -1, Kind: protocol.AffinitySingleCall}
	}
	if rule.Cookie != "" {
		key = ""
		if c, err := req.Cookie(rule.Cookie); err == nil {
			key = c.Value
		}
	}
	return r.route(req.Context(), rule, key)
}

// Answered learns from replica's answer (status and header) to req,
// routed by d: a 201 whose Location path matches a client-activated rule
// (without cookie) creates the object's entry on replica; a Set-Cookie of
// a client-activated rule's cookie creates the entry keyed by its value
// (the replica deleting the cookie drops the entry of the cookie the call
// carried).
func (r *Router) Answered(req *http.Request, d frontdoor.AffinityDecision, replica string, status int, header http.Header) {
	if status == http.StatusCreated {
		if loc := header.Get("Location"); loc != "" {
			r.learnLocation(req, loc, replica)
		}
	}
	if !r.rules.Cookies() {
		return
	}
	for _, line := range header.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			continue
		}
		for i := range r.rules.Len() {
			rule := r.rules.Rule(i)
			if rule.Cookie != c.Name {
				continue
			}
			if c.MaxAge < 0 || c.Value == "" { // deleted: the object the call named ends
				if had, err := req.Cookie(rule.Cookie); err == nil {
					r.table.Drop(rule.Index, had.Value, false)
				}
				continue
			}
			r.created(req.Context(), rule, c.Value, replica, false)
		}
	}
}

// learnLocation creates the entry of the object a 201 names at loc (as a
// GET of it, on loc's host or req's).
func (r *Router) learnLocation(req *http.Request, loc, replica string) {
	u, err := url.Parse(loc)
	if err != nil || u.Path == "" {
		return
	}
	host := req.Host
	if u.Host != "" {
		host = u.Host
	}
	get := (&http.Request{Method: http.MethodGet, Host: host, URL: &url.URL{Path: u.Path, RawPath: u.RawPath}, Header: http.Header{}}).WithContext(req.Context())
	rule, key, ok := r.rules.Match(get)
	if !ok || rule.Kind != protocol.AffinityClientActivated || rule.Cookie != "" {
		return
	}
	r.created(req.Context(), rule, key, replica, false)
}
