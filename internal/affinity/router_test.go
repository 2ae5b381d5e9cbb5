package affinity

import (
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func members(states ...string) []Member {
	out := make([]Member, 0, len(states)/2)
	for i := 0; i+1 < len(states); i += 2 {
		out = append(out, Member{ID: states[i], State: states[i+1]})
	}
	return out
}

func get(t *testing.T, path string, cookies ...*http.Cookie) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://front"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return req
}

func httpRules(t *testing.T) *Table {
	t.Helper()
	rules, err := Compile("http", []protocol.AffinityRule{
		{Kind: protocol.AffinitySingleton, Match: "/s/{k}"},
		{Kind: protocol.AffinityClientActivated, Match: "/o/{id}", Timeout: protocol.Duration(10 * time.Second)},
		{Kind: protocol.AffinityClientActivated, Match: "/cart/", Cookie: "cart"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return NewTable(rules)
}

func TestRouterHTTP(t *testing.T) {
	t.Parallel()
	clk := &clock{t0}
	tb := httpRules(t)
	r := NewRouter(tb, "g", members("r1", "active", "r2", "active", "r3", "active"), false, clk.now)
	if d := r.RouteHTTP(get(t, "/other")); d.Rule != -1 || d.Replica != "" {
		t.Fatalf("unmatched: %+v", d)
	}
	d := r.RouteHTTP(get(t, "/s/k1"))
	if want := Pick("g", 0, "k1", []string{"r1", "r2", "r3"}); d.Rule != 0 || d.Key != "k1" || d.Replica != want {
		t.Fatalf("singleton: %+v, want replica %s", d, want)
	}
	// No entry yet: the strategy picks; the 201 creates the entry.
	post, _ := http.NewRequest(http.MethodPost, "http://front/o/", nil)
	d = r.RouteHTTP(post)
	if d.Replica != "" {
		t.Fatalf("POST /o/: %+v", d)
	}
	r.Answered(post, d, "r2", http.StatusCreated, http.Header{"Location": {"/o/42"}})
	if d := r.RouteHTTP(get(t, "/o/42")); d.Replica != "r2" || d.Gone || d.Key != "42" {
		t.Fatalf("after 201: %+v", d)
	}
	// An absolute Location on another host does not match a host-less
	// pattern any less.
	r.Answered(post, d, "r3", http.StatusCreated, http.Header{"Location": {"http://elsewhere/o/43"}})
	if d := r.RouteHTTP(get(t, "/o/43")); d.Replica != "r3" {
		t.Fatalf("absolute Location: %+v", d)
	}
	// A 200 with a Location creates nothing.
	r.Answered(post, d, "r3", http.StatusOK, http.Header{"Location": {"/o/44"}})
	if d := r.RouteHTTP(get(t, "/o/44")); d.Replica != "" {
		t.Fatalf("200 created an entry: %+v", d)
	}
	// Cookie rule.
	d = r.RouteHTTP(get(t, "/cart/items"))
	if d.Rule != 2 || d.Replica != "" {
		t.Fatalf("cart without cookie: %+v", d)
	}
	r.Answered(get(t, "/login"), frontdoor.AffinityDecision{Rule: -1}, "r1", http.StatusOK, http.Header{"Set-Cookie": {"cart=c9; Path=/"}})
	if d := r.RouteHTTP(get(t, "/cart/items", &http.Cookie{Name: "cart", Value: "c9"})); d.Replica != "r1" || d.Key != "c9" {
		t.Fatalf("cart with cookie: %+v", d)
	}
	r.Answered(get(t, "/logout", &http.Cookie{Name: "cart", Value: "c9"}), frontdoor.AffinityDecision{Rule: -1}, "r1", http.StatusOK, http.Header{"Set-Cookie": {"cart=; Max-Age=0"}})
	if d := r.RouteHTTP(get(t, "/cart/items", &http.Cookie{Name: "cart", Value: "c9"})); d.Replica != "" {
		t.Fatalf("cart after the cookie was deleted: %+v", d)
	}
	if tb.Stats().Created != 3 {
		t.Fatalf("created %d, want 3", tb.Stats().Created)
	}

	// r2 goes down: its object is gone (once), the entry dropped.
	r = NewRouter(tb, "g", members("r1", "active", "r2", "down", "r3", "active"), false, clk.now)
	if d := r.RouteHTTP(get(t, "/o/42")); !d.Gone {
		t.Fatalf("replica down: %+v, want Gone", d)
	}
	if d := r.RouteHTTP(get(t, "/o/42")); d.Gone || d.Replica != "" {
		t.Fatalf("second call after Gone: %+v, want a fresh pick", d)
	}
	// Idle expiry on the clock: /o/43 last used at t0, timeout 10s.
	clk.t = t0.Add(10 * time.Second)
	if d := r.RouteHTTP(get(t, "/o/43")); d.Replica != "" {
		t.Fatalf("expired entry still routes: %+v", d)
	}
	if s := tb.Stats(); s.Gone != 1 || s.Expired != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRouterLiveness(t *testing.T) {
	t.Parallel()
	clk := &clock{t0}
	tb := httpRules(t)
	all := []string{"r1", "r2", "r3"}
	key := ""
	for i := range 100 { // a key that r1 ranks first
		k := string(rune('a'+i%26)) + string(rune('a'+i/26))
		if Pick("g", 0, k, all) == "r1" {
			key = k
			break
		}
	}
	tb.Create(1, "obj", "r1", t0)
	rank := Ranking("g", 0, key, all)
	tests := []struct {
		name    string
		cluster bool
		state   string
		single  string // the singleton key's replica
		gone    bool   // the client-activated entry on r1
	}{
		{"single node, ejected", false, protocol.StateEjected, rank[1], true},
		{"cluster, ejected here", true, protocol.StateEjected, "r1", false},
		{"cluster, down", true, protocol.StateDown, rank[1], true},
		{"draining", false, protocol.StateDraining, rank[1], false},
		{"cluster, draining", true, protocol.StateDraining, rank[1], false},
	}
	for _, tt := range tests {
		r := NewRouter(tb, "g", members("r1", tt.state, "r2", "active", "r3", "active"), tt.cluster, clk.now)
		if d := r.RouteHTTP(get(t, "/s/"+key)); d.Replica != tt.single {
			t.Errorf("%s: singleton on %q, want %q", tt.name, d.Replica, tt.single)
		}
		if !tt.gone {
			if d := r.RouteHTTP(get(t, "/o/obj")); d.Gone || d.Replica != "r1" {
				t.Errorf("%s: entry %+v, want kept on r1", tt.name, d)
			}
		}
	}
	r := NewRouter(tb, "g", members("r2", "active", "r3", "active"), true, clk.now) // r1 removed
	if d := r.RouteHTTP(get(t, "/o/obj")); !d.Gone {
		t.Fatalf("removed replica: %+v, want Gone", d)
	}
}

func TestRouterTCP(t *testing.T) {
	t.Parallel()
	clk := &clock{t0}
	rules, err := Compile("tcp", []protocol.AffinityRule{{Kind: protocol.AffinityClientActivated, Timeout: protocol.Duration(5 * time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	tb := NewTable(rules)
	var a frontdoor.Affinity = NewRouter(tb, "t", members("r1", "active", "r2", "active"), false, clk.now)
	d := a.RouteConn("10.0.0.1")
	if d.Replica != "" || d.Key != "10.0.0.1" || d.Rule != 0 {
		t.Fatalf("first connection: %+v", d)
	}
	a.Opened(d, "r2")
	clk.t = t0.Add(time.Hour) // open: not idle
	tb.Expire(clk.t)
	if d2 := a.RouteConn("10.0.0.1"); d2.Replica != "r2" {
		t.Fatalf("while open: %+v", d2)
	}
	a.Closed(d, "r2")
	clk.t = clk.t.Add(5 * time.Second)
	if d2 := a.RouteConn("10.0.0.1"); d2.Replica != "" {
		t.Fatalf("idle 5s after close: %+v", d2)
	}

	single, _ := Compile("tcp", []protocol.AffinityRule{{Kind: protocol.AffinitySingleton}})
	s := NewRouter(NewTable(single), "t", members("r1", "active", "r2", "active", "r3", "active"), false, clk.now)
	first := s.RouteConn("10.0.0.1").Replica
	if first == "" || s.RouteConn("10.9.9.9").Replica != first {
		t.Fatal("tcp singleton: every connection to one replica")
	}
	if NewRouter(NewTable(nil), "t", nil, false, clk.now) != nil {
		t.Fatal("NewRouter without rules: want nil")
	}
}
