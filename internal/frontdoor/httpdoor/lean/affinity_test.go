package lean

import (
	"net/http"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestAffinityRequestAndAnswer: what the lean path hands the session
// table: the request's method, host, path (unescaped, the raw form kept)
// and cookies; the response's Location and Set-Cookie fields.
func TestAffinityRequestAndAnswer(t *testing.T) {
	t.Parallel()
	in := []byte("GET /objects/a%2Fb/x?q=1 HTTP/1.1\r\nHost: fd.example\r\nCookie: sess=s1\r\ncookie: cart=c2\r\nX-Other: 1\r\n\r\n")
	c := &conn{}
	if v := parseRequest(in, &c.req); v != serveLean {
		t.Fatalf("parse: verdict %d (%s)", v, c.req.why)
	}
	r := c.affinityRequest(in, http.MethodGet)
	if r.Method != "GET" || r.Host != "fd.example" || r.URL.Path != "/objects/a/b/x" || r.URL.EscapedPath() != "/objects/a%2Fb/x" {
		t.Fatalf("request %s %s %q (escaped %q)", r.Method, r.Host, r.URL.Path, r.URL.EscapedPath())
	}
	if s, err := r.Cookie("sess"); err != nil || s.Value != "s1" {
		t.Fatalf("cookie sess: %v %v", s, err)
	}
	if s, err := r.Cookie("cart"); err != nil || s.Value != "c2" {
		t.Fatalf("cookie cart: %v %v", s, err)
	}
	out := []byte("HTTP/1.1 201 Created\r\nLocation: /objects/7\r\nSet-Cookie: a=1\r\nset-cookie: b=2; Path=/\r\nContent-Length: 0\r\n\r\n")
	var res resHead
	if v := parseResponse(out, &res); v != serveLean {
		t.Fatalf("parse response: verdict %d (%s)", v, res.why)
	}
	h := answerHeader(out, &res)
	if h.Get("Location") != "/objects/7" || len(h.Values("Set-Cookie")) != 2 || len(h) != 2 {
		t.Fatalf("answer header %v", h)
	}
}

// TestNoAffinityAllocatesNothing: a group without rules costs the lean
// path's hot loop no allocation.
func TestNoAffinityAllocatesNothing(t *testing.T) {
	snap := &frontdoor.Snapshot{Binding: protocol.PerRequest}
	if n := testing.AllocsPerRun(100, func() {
		_, ok := AffinityOf(snap)
		if _, pinned, _ := AcquireAffinity(snap, frontdoor.AffinityDecision{}); ok || pinned {
			panic("affinity without rules")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per call", n)
	}
}
