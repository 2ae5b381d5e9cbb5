package httpdoor

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestRedirectShape(t *testing.T) {
	t.Parallel()
	for _, binding := range []string{protocol.OnDemand, protocol.PerSession} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			g := newTestGroup(groupConfig{name: "prime", binding: binding, members: []spec{
				{id: "r1", url: "http://10.0.0.1:9001/svc/a"},
				{id: "r2", url: "http://10.0.0.2:9002/b/"},
			}})
			fd := startFrontDoor(t, g, Options{})
			c := noFollow(t)

			for _, want := range []struct{ replica, location string }{
				{"r1", "http://10.0.0.1:9001/svc/a/prime/7?x=1&y=%2F"},
				{"r2", "http://10.0.0.2:9002/b/prime/7?x=1&y=%2F"},
			} {
				res, body := do(t, c, "GET", fd.url+"/prime/7?x=1&y=%2F", "", protocol.HeaderClient, "c1")
				if res.StatusCode != http.StatusTemporaryRedirect {
					t.Fatalf("status = %d, want 307", res.StatusCode)
				}
				if got := res.Header.Get("Location"); got != want.location {
					t.Errorf("Location = %q, want %q", got, want.location)
				}
				if got := res.Header.Get(protocol.HeaderGroup); got != "prime" {
					t.Errorf("%s = %q, want prime", protocol.HeaderGroup, got)
				}
				if got := res.Header.Get(protocol.HeaderReplica); got != want.replica {
					t.Errorf("%s = %q, want %s", protocol.HeaderReplica, got, want.replica)
				}
				if got := res.Header.Get("Cache-Control"); got != "no-store" {
					t.Errorf("Cache-Control = %q, want no-store", got)
				}
				if len(body) != 0 {
					t.Errorf("body = %q, want empty", body)
				}
				ev := recv(t, g.bound, "Bound")
				if ev != (boundEvent{want.replica, "c1", false}) {
					t.Errorf("Bound(%+v), want replica %s, client c1, not moved", ev, want.replica)
				}
			}
			for _, id := range []string{"r1", "r2"} {
				cn := g.counter(id)
				if r, b := cn.Redirected.Load(), cn.Bindings.Load(); r != 1 || b != 1 {
					t.Errorf("%s: redirected %d, bindings %d; want 1, 1", id, r, b)
				}
			}
		})
	}
}

func TestRedirectMoved(t *testing.T) {
	t.Parallel()
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{{id: "r1", url: "http://10.0.0.1:1"}}})
	fd := startFrontDoor(t, g, Options{})
	c := noFollow(t)
	for _, tc := range []struct {
		name  string
		hdr   []string
		moved bool
	}{
		{"first binding", nil, false},
		{"bound elsewhere", []string{protocol.HeaderBinding, "g/r9"}, true},
		{"bound to the same replica", []string{protocol.HeaderBinding, "g/r1"}, false},
		{"binding of another group", []string{protocol.HeaderBinding, "other/r9"}, false},
		{"rebind without binding", []string{protocol.HeaderRebind, "1"}, true},
		{"malformed binding", []string{protocol.HeaderBinding, "garbage"}, false},
	} {
		res, _ := do(t, c, "GET", fd.url+"/", "", tc.hdr...)
		if res.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("%s: status %d", tc.name, res.StatusCode)
		}
		if ev := recv(t, g.bound, "Bound"); ev.moved != tc.moved {
			t.Errorf("%s: moved = %v, want %v", tc.name, ev.moved, tc.moved)
		}
	}
	if n := g.counter("r1").Rebinds.Load(); n != 2 {
		t.Errorf("rebinds = %d, want 2", n)
	}
}

func TestRedirectPlannedMove(t *testing.T) {
	t.Parallel()
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{
		{id: "r1", url: "http://10.0.0.1:1"}, {id: "r2", url: "http://10.0.0.2:2"},
	}, planned: map[string]string{"mover": "r2"}, picker: newFirst})
	fd := startFrontDoor(t, g, Options{})
	c := noFollow(t)
	res, _ := do(t, c, "GET", fd.url+"/x", "", protocol.HeaderClient, "mover", protocol.HeaderBinding, "g/r1")
	if got := res.Header.Get(protocol.HeaderReplica); got != "r2" {
		t.Errorf("planned client went to %q, want r2", got)
	}
	if ev := recv(t, g.bound, "Bound"); ev != (boundEvent{"r2", "mover", true}) {
		t.Errorf("Bound(%+v), want r2/mover/moved", ev)
	}
	res, _ = do(t, c, "GET", fd.url+"/x", "", protocol.HeaderClient, "other")
	if got := res.Header.Get(protocol.HeaderReplica); got != "r1" {
		t.Errorf("unplanned client went to %q, want the picker's r1", got)
	}
}

// TestRedirectFollow is `curl -L`: a plain client follows the 307 to the
// replica, keeping the method and body.
func TestRedirectFollow(t *testing.T) {
	t.Parallel()
	r1 := startReplica(t, "r1", "/base", nil)
	r2 := startReplica(t, "r2", "", nil)
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{r1.spec(), r2.spec()}})
	fd := startFrontDoor(t, g, Options{})
	c := h1Client(t)

	res, b := do(t, c, "POST", fd.url+"/echo?n=3", "payload")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status = %d: %s", res.StatusCode, b)
	}
	e := decodeEcho(t, b)
	if e.Replica != "r1" || e.Method != "POST" || e.Path != "/base/echo" || e.Query != "n=3" || e.Body != "payload" {
		t.Errorf("replica saw %+v", e)
	}
	res, b = do(t, c, "GET", fd.url+"/prime/11", "")
	if e := decodeEcho(t, b); res.StatusCode != 200 || e.Replica != "r2" || e.Path != "/prime/11" {
		t.Errorf("second call: %d %+v", res.StatusCode, e)
	}
	if r1.hits.Load() != 1 || r2.hits.Load() != 1 {
		t.Errorf("hits r1=%d r2=%d, want 1 and 1", r1.hits.Load(), r2.hits.Load())
	}
}

// TestRoundRobinStrategy runs the front door over the registered
// round-robin strategy rather than the test picker.
func TestRoundRobinStrategy(t *testing.T) {
	t.Parallel()
	st, err := strategy.New("round-robin", nil, strategy.Env{Rand: strategy.NewRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{
		{id: "a", url: "http://10.0.0.1:1"}, {id: "b", url: "http://10.0.0.2:1"}, {id: "c", url: "http://10.0.0.3:1"},
	}, picker: st.Picker})
	fd := startFrontDoor(t, g, Options{})
	c := noFollow(t)
	seen := map[string]int{}
	for range 9 {
		res, _ := do(t, c, "GET", fd.url+"/", "")
		seen[res.Header.Get(protocol.HeaderReplica)]++
	}
	if seen["a"] != 3 || seen["b"] != 3 || seen["c"] != 3 {
		t.Errorf("distribution %v, want 3 each", seen)
	}
}

func TestLocation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, base, target, want string
	}{
		{"root base", "http://h:1", "/a/b?q=1", "http://h:1/a/b?q=1"},
		{"slash base", "http://h:1/", "/a", "http://h:1/a"},
		{"base path", "http://h:1/api", "/a", "http://h:1/api/a"},
		{"base path with slash", "http://h:1/api/", "/a/", "http://h:1/api/a/"},
		{"root request", "http://h:1/api", "/", "http://h:1/api/"},
		{"escaped path", "http://h:1/x%20y", "/a%2Fb", "http://h:1/x%20y/a%2Fb"},
		{"empty query kept", "https://h", "/a?", "https://h/a?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGroup(groupConfig{members: []spec{{id: "r", url: tc.base}}})
			m := g.Snapshot().Members["r"]
			in, err := url.ParseRequestURI(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if got := location(m, in); got != tc.want {
				t.Errorf("location = %q, want %q", got, tc.want)
			}
			u, err := targetURL(m, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.String(); got != tc.want && !(tc.name == "empty query kept" && got == "https://h/a") {
				t.Errorf("targetURL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRequestKey(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.7:5555"
	r.Header.Set("X-User", "alice")
	r.AddCookie(&http.Cookie{Name: "sid", Value: "s-42"})
	for _, tc := range []struct {
		name string
		spec strategy.KeySpec
		want string
	}{
		{"none", strategy.KeySpec{}, ""},
		{"header", strategy.KeySpec{Source: strategy.KeyHeader, Name: "x-user"}, "alice"},
		{"cookie", strategy.KeySpec{Source: strategy.KeyCookie, Name: "sid"}, "s-42"},
		{"missing cookie", strategy.KeySpec{Source: strategy.KeyCookie, Name: "nope"}, ""},
		{"client address", strategy.KeySpec{Source: strategy.KeyClientAddress}, "192.0.2.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := requestKey(tc.spec, r); got != tc.want {
				t.Errorf("key = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBindingSwitch changes the binding mode at run time: the next request
// follows the new mode and the call in flight is not failed.
func TestBindingSwitch(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	r1 := startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		_, _ = w.Write([]byte("done " + r.URL.Path))
	})
	cfg := groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}}
	g := newTestGroup(cfg)
	fd := startFrontDoor(t, g, Options{})

	type result struct {
		status int
		body   string
	}
	slow := make(chan result, 1)
	c := h1Client(t)
	go func() {
		res, err := c.Get(fd.url + "/slow")
		if err != nil {
			slow <- result{0, err.Error()}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		slow <- result{res.StatusCode, string(b)}
	}()
	recv(t, entered, "the slow call to reach the replica")

	cfg.binding = protocol.OnDemand
	g.publish(cfg)
	res, _ := do(t, noFollow(t), "GET", fd.url+"/fast", "")
	if res.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("after the switch: status %d, want 307", res.StatusCode)
	}
	close(release)
	if got := recv(t, slow, "the slow call"); got.status != 200 || got.body != "done /slow" {
		t.Errorf("call in flight across the switch: %+v", got)
	}
}

func TestRedirectAvoidsUnreachableReplica(t *testing.T) {
	t.Parallel()
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{
		{id: "r1", url: "http://10.0.0.1:1"}, {id: "r2", url: "http://10.0.0.2:2"},
	}, picker: newFirst})
	fd := startFrontDoor(t, g, Options{})
	c := noFollow(t)
	// The picker always answers r1; a client that could not reach r1 says
	// so and must be bound elsewhere, while others still get r1.
	res, _ := do(t, c, "GET", fd.url+"/", "", protocol.HeaderBinding, "g/r1", protocol.HeaderRebind, protocol.RebindUnreachable)
	if got := res.Header.Get(protocol.HeaderReplica); got != "r2" {
		t.Fatalf("client leaving unreachable r1 bound to %q, want r2", got)
	}
	recv(t, g.bound, "Bound")
	res, _ = do(t, c, "GET", fd.url+"/", "")
	if got := res.Header.Get(protocol.HeaderReplica); got != "r1" {
		t.Fatalf("plain client bound to %q, want r1", got)
	}
	recv(t, g.bound, "Bound")
	// The hint of another group is ignored.
	res, _ = do(t, c, "GET", fd.url+"/", "", protocol.HeaderBinding, "other/r1", protocol.HeaderRebind, protocol.RebindUnreachable)
	if got := res.Header.Get(protocol.HeaderReplica); got != "r1" {
		t.Fatalf("hint of another group: bound to %q, want r1", got)
	}
	recv(t, g.bound, "Bound")
}
