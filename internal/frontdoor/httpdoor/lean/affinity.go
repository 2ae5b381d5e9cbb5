package lean

import (
	"net/http"
	"net/url"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
)

// Affinity is the HTTP half of a group's session table (affinity.Router,
// through Snapshot.Affinity; docs/affinity.md): both engines ask it where
// a call must go before the strategy picks, and tell it each answer so
// that it learns the objects replicas create.
type Affinity interface {
	// RouteHTTP decides a call by its method, host, path and cookies.
	RouteHTTP(req *http.Request) frontdoor.AffinityDecision
	// Answered learns from replica's answer (a 201's Location, a
	// Set-Cookie) to req, which d decided.
	Answered(req *http.Request, d frontdoor.AffinityDecision, replica string, status int, header http.Header)
}

// AffinityOf is snap's session table when its group has affinity rules
// (ok false: none; the call is balanced as always). It does not allocate.
func AffinityOf(snap *frontdoor.Snapshot) (Affinity, bool) {
	a, ok := snap.Affinity.(Affinity)
	return a, ok
}

// AcquireAffinity is where d sends a call: pinned (d.Replica set, or
// Gone) to its member through AcquirePinned, never elsewhere; ok false
// when d pins nothing and the strategy picks.
func AcquireAffinity(snap *frontdoor.Snapshot, d frontdoor.AffinityDecision) (m *frontdoor.Member, ok bool, err error) {
	if !d.Gone && d.Replica == "" {
		return nil, false, nil
	}
	m, err = snap.AcquirePinned(d)
	return m, true, err
}

// PinnedUnreachable is the error of a pinned call whose replica could not
// be reached: it is not sent to another.
func PinnedUnreachable(d frontdoor.AffinityDecision, err error) error {
	return &frontdoor.AffinityError{Decision: d, Reason: "connecting failed: " + err.Error()}
}

// affinityRequest is the request the session table matches: the method,
// host, path and cookies of the head c.req holds in b.
func (c *conn) affinityRequest(b []byte, method string) *http.Request {
	h := &c.req
	u := &url.URL{Path: string(h.path.of(b))}
	if h.escaped {
		raw := u.Path
		if p, err := url.PathUnescape(raw); err == nil {
			u.Path, u.RawPath = p, raw
		}
	}
	r := &http.Request{Method: method, URL: u, Host: string(h.host.of(b)), Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	for i := range h.fields {
		if f := &h.fields[i]; asciiEqualFold(f.name.of(b), []byte("Cookie")) {
			r.Header.Add("Cookie", string(f.value.of(b)))
		}
	}
	return r
}

// answerHeader is what the session table learns from in a response head:
// its Location and Set-Cookie fields (ub holds the head res was parsed
// from).
func answerHeader(ub []byte, res *resHead) http.Header {
	h := http.Header{}
	for i := range res.fields {
		f := &res.fields[i]
		name := f.name.of(ub)
		switch {
		case asciiEqualFold(name, []byte("Location")):
			h.Add("Location", string(f.value.of(ub)))
		case asciiEqualFold(name, []byte("Set-Cookie")):
			h.Add("Set-Cookie", string(f.value.of(ub)))
		}
	}
	return h
}
