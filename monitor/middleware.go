package monitor

import (
	"net/http"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Handler wraps a replica's handler: it answers the balancer's load probes
// at protocol.ProbePath (strategy prequal), measures every call and, for calls
// of bound clients (those carrying Fulcrum-Binding), answers the clients an
// advisory sends back with a rebind redirect instead of running the call.
// Calls without Fulcrum-Binding always run. A worker's (Options.Worker)
// first call of a named client a sibling owns runs and is answered with
// Connection: close. In pull mode it also answers the balancer's pulls on
// the path of Options.PullURL.
//
// The wrapped ResponseWriter is passed through untouched, so Flusher,
// Hijacker and the like keep working.
func (m *Monitor) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == protocol.ProbePath {
			m.serveLoadProbe(w, r)
			return
		}
		if m.pullPath != "" && r.URL.Path == m.pullPath {
			m.servePull(w, r)
			return
		}
		if headerValue(r.Header, protocol.HeaderProbe) != "" {
			next.ServeHTTP(w, r) // the balancer's health probe: not load
			return
		}
		m.serve(w, r, next)
	})
}

// serve is the per-call path: a header lookup, at most one shard lock, a
// few atomics, two clock reads. A rebind allocates its Location.
func (m *Monitor) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	binding := headerValue(r.Header, protocol.HeaderBinding)
	bound := binding != "" && m.ownsBinding(binding)
	var client string
	if bound {
		client = headerValue(r.Header, protocol.HeaderClient)
	}
	c, ok := m.Begin(client, bound)
	if !ok {
		m.rebind(w, r, m.FrontDoor())
		return
	}
	defer c.End()
	if bound && m.opts.Worker != nil && m.advice.Load().reconnect(client) {
		// Named, but a sibling worker's: let its next call reach another
		// worker (Options.Worker).
		w.Header().Set("Connection", "close")
	}
	next.ServeHTTP(w, r)
}

// finish accounts a call that started at start with rif calls in flight
// (itself included).
func (m *Monitor) finish(start time.Time, rif int64) {
	d := m.clock.Now().Sub(start)
	if d > 0 {
		m.latencyNS.Add(uint64(d))
	}
	m.latencies.add(d, rif)
	m.hist.add(d)
	m.done.Add(1)
	m.inflight.Add(-1)
}

// ownsBinding reports whether a Fulcrum-Binding value names this group.
func (m *Monitor) ownsBinding(binding string) bool {
	return m.bindingPrefix == "" || strings.HasPrefix(binding, m.bindingPrefix)
}

// rebind answers r with a 307 to the front door, same path and query, and
// Fulcrum-Rebind: 1; the call does not run.
func (m *Monitor) rebind(w http.ResponseWriter, r *http.Request, frontDoor string) {
	loc := frontDoor + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	h := w.Header()
	h.Set("Location", loc)
	h.Set(protocol.HeaderRebind, "1")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusTemporaryRedirect)
}

// headerValue is h.Get for a key already in canonical form, without the
// canonicalisation.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
