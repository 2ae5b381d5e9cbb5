package httpdoor

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// serveRedirect binds the client to a replica (on-demand and per-session):
// 307 to the replica's base URL plus the request's path and query. A client
// at the front door always wants a (new) binding, so a Fulcrum-Binding it
// still carries is only used to tell a move from a first binding. A client
// coming back with Fulcrum-Rebind that the snapshot has no move for may
// have one another instance planned: PickRebind looks it up (bounded).
func (s *Server) serveRedirect(w http.ResponseWriter, r *http.Request, snap *frontdoor.Snapshot, lw *LogWriter) {
	req := strategy.Request{Client: r.Header.Get(protocol.HeaderClient)}
	req.Key = requestKey(snap.Key, r)
	requestFacts(r, &req)
	rebind := r.Header.Get(protocol.HeaderRebind)
	var m *frontdoor.Member
	var looked bool
	var err error
	if rebind != "" && snap.LookupMove != nil {
		m, looked, err = snap.PickRebind(r.Context(), &req)
	} else {
		m, err = snap.Pick(&req)
	}
	if err != nil {
		s.writeError(w, r, snap, err)
		return
	}
	if m != nil && len(snap.Eligible) > 1 && rebind == protocol.RebindUnreachable {
		if a := avoidUnreachable(r, snap, &req, m); a != m {
			m, looked = a, false
		}
	}
	// One allocation backs the three header values; each is capped so an
	// append elsewhere cannot write into its neighbour.
	vals := [...]string{location(m, r.URL), snap.Group, m.ID()}
	h := w.Header()
	h["Location"] = vals[0:1:1]
	h[protocol.HeaderGroup] = vals[1:2:2]
	h[protocol.HeaderReplica] = vals[2:3:3]
	h["Cache-Control"] = noStore
	w.WriteHeader(http.StatusTemporaryRedirect)
	if lw != nil {
		lw.replica = m.ID()
	}
	m.Counters.Redirected.Add(1)
	if looked && snap.MoveBound != nil {
		snap.MoveBound(req.Client, m.ID())
	}
	s.g.Bound(m, req.Client, movedFrom(r, snap.Group, m))
}

var noStore = []string{"no-store"}

// maxAvoidPicks bounds the re-picks that steer a client away from the
// replica it could not connect to.
const maxAvoidPicks = 4

// avoidUnreachable re-picks, a bounded number of times, when the pick is
// the replica the client says refused its connection (Fulcrum-Rebind:
// unreachable with the Fulcrum-Binding it left). Health checks take the
// replica out of the group; this only keeps one client from being sent
// back to a dead replica before they do.
func avoidUnreachable(r *http.Request, snap *frontdoor.Snapshot, req *strategy.Request, m *frontdoor.Member) *frontdoor.Member {
	g, id, ok := strings.Cut(r.Header.Get(protocol.HeaderBinding), "/")
	if !ok || g != snap.Group {
		return m
	}
	for i := 0; i < maxAvoidPicks && m.ID() == id; i++ {
		next, err := snap.Picker.Pick(req)
		if err != nil {
			return m
		}
		m = snap.Eligible[next.Index]
	}
	if m.ID() == id {
		for _, e := range snap.Eligible {
			if e.ID() != id {
				return e
			}
		}
	}
	return m
}

// movedFrom tells whether the client comes back from another replica of
// the group: it names a different replica in Fulcrum-Binding, or, having
// dropped its binding, says Fulcrum-Rebind.
func movedFrom(r *http.Request, group string, m *frontdoor.Member) bool {
	if b := r.Header.Get(protocol.HeaderBinding); b != "" {
		g, id, ok := strings.Cut(b, "/")
		return ok && g == group && id != m.ID()
	}
	return r.Header.Get(protocol.HeaderRebind) != ""
}

// RequestKey is the key of r the strategy wants (k), as this front door
// reads it for its picks: a header's value, a cookie's, or the client's
// address; "" for KeyNone. Other front doors of HTTP groups (the
// replicated bridge's read-only calls) pick with it.
func RequestKey(k strategy.KeySpec, r *http.Request) string { return requestKey(k, r) }

// requestKey extracts the key a keyed strategy asks for.
func requestKey(k strategy.KeySpec, r *http.Request) string {
	switch k.Source {
	case strategy.KeyHeader:
		return r.Header.Get(k.Name)
	case strategy.KeyCookie:
		if c, err := r.Cookie(k.Name); err == nil {
			return c.Value
		}
	case strategy.KeyClientAddress:
		return clientIP(r.RemoteAddr)
	}
	return ""
}

// clientIP is the host part of a RemoteAddr, without allocating.
func clientIP(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// baseURL is the member's parsed base URL.
func baseURL(m *frontdoor.Member) (*url.URL, error) {
	if m.URL != nil {
		return m.URL, nil
	}
	return url.Parse(m.Address)
}

// location is the member's base URL (with its base path) followed by the
// request's path and query, as sent by the client.
func location(m *frontdoor.Member, in *url.URL) string {
	base, err := baseURL(m)
	if err != nil {
		return m.Address
	}
	bp := strings.TrimSuffix(base.EscapedPath(), "/")
	p := in.EscapedPath()
	if p == "" {
		p = "/"
	}
	var b strings.Builder
	b.Grow(len(base.Scheme) + 3 + len(base.Host) + len(bp) + len(p) + 1 + len(in.RawQuery))
	b.WriteString(base.Scheme)
	b.WriteString("://")
	b.WriteString(base.Host)
	b.WriteString(bp)
	b.WriteString(p)
	if in.RawQuery != "" || in.ForceQuery {
		b.WriteByte('?')
		b.WriteString(in.RawQuery)
	}
	return b.String()
}

// joinPath appends a request path to a base path: "/api" or "/api/" and
// "/x" give "/api/x"; an empty request path counts as "/".
func joinPath(base, p string) string {
	if p == "" {
		p = "/"
	}
	base = strings.TrimSuffix(base, "/")
	if base == "" {
		return p
	}
	return base + p
}

// targetURL is the URL a proxied call to m is sent to.
func targetURL(m *frontdoor.Member, in *url.URL) (*url.URL, error) {
	base, err := baseURL(m)
	if err != nil {
		return nil, err
	}
	u := &url.URL{
		Scheme:   base.Scheme,
		Host:     base.Host,
		Path:     joinPath(base.Path, in.Path),
		RawQuery: in.RawQuery,
	}
	if in.RawPath != "" || base.RawPath != "" {
		u.RawPath = joinPath(base.EscapedPath(), in.EscapedPath())
	}
	return u, nil
}
