package balancer_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/affinity"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// affinityEngines are the HTTP engines the affinity tests run on.
var affinityEngines = []string{httpdoor.EngineLean, httpdoor.EngineStdlib}

// objectReplica is a replica that creates objects: POST /objects/ answers
// 201 with Location /objects/<name>-<n>, POST /login sets the cookie sess
// to <name>-<n>; every other call answers the replica's name.
func objectReplica(t *testing.T, name string) *httptest.Server {
	var n atomic.Int64
	return newReplica(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/objects/":
			w.Header().Set("Location", fmt.Sprintf("/objects/%s-%d", name, n.Add(1)))
			w.WriteHeader(http.StatusCreated)
		case r.Method == http.MethodPost && r.URL.Path == "/login":
			http.SetCookie(w, &http.Cookie{Name: "sess", Value: fmt.Sprintf("%s-%d", name, n.Add(1)), Path: "/"})
		}
		io.WriteString(w, name)
	}))
}

// affinityGroup is a per-request round-robin group with the given rules,
// probed every 100 ms and marked down by two failed probes.
func affinityGroup(name string, rules ...protocol.AffinityRule) protocol.Group {
	return protocol.Group{
		Name: name, Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName, ReportInterval: ms(20),
		Health:   protocol.Health{Path: "/healthz", Interval: ms(100), Timeout: ms(90), Rise: 1, Fall: 2, Passive: protocol.Passive{ConsecutiveFailures: -1}},
		Affinity: rules,
	}
}

func do(t *testing.T, c *http.Client, method, url string, cookies ...*http.Cookie) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// waitState waits until replica id of group is in state.
func (e *env) waitState(group, id, state string) {
	e.t.Helper()
	eventually(e.t, 5*time.Second, func() error {
		if st := replicaOf(e.t, e.mustGroup(group), id).State; st != state {
			return fmt.Errorf("replica %s is %s, want %s", id, st, state)
		}
		return nil
	})
}

// errorCode is the code of a front door's JSON error.
func errorCode(t *testing.T, a answer) string {
	t.Helper()
	var body httpdoor.ErrorBody
	if err := json.Unmarshal([]byte(a.body), &body); err != nil {
		t.Fatalf("answer %d %q: not a JSON error: %v", a.status, a.body, err)
	}
	return body.Error.Code
}

// TestAffinitySingleton: a singleton pattern's keys spread over the
// replicas by rendezvous hashing and stay put call after call (the group's
// round-robin would rotate them); a replica killed moves only its own keys,
// each to the next replica of its ranking.
func TestAffinitySingleton(t *testing.T) {
	t.Parallel()
	for _, engine := range affinityEngines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{engine: engine})
			gs := e.mustPutGroup(affinityGroup("single", protocol.AffinityRule{Kind: protocol.AffinitySingleton, Match: "/objects/{name}/{rest...}"}))
			idOf, srvOf := map[string]string{}, map[string]*httptest.Server{}
			var ids []string
			for _, name := range []string{"a", "b", "c"} {
				srv := objectReplica(t, name)
				id := e.mustRegister("single", srv.URL).ID
				idOf[name], srvOf[id] = id, srv
				ids = append(ids, id)
				e.waitState("single", id, protocol.StateActive)
			}
			c := httpClient(t)
			where := map[string]string{} // key → replica id
			used := map[string]int{}
			for i := range 24 {
				key := fmt.Sprint("k", i)
				for range 3 {
					a := do(t, c, http.MethodGet, gs.Advertise+"/objects/"+key+"/x")
					if a.status != http.StatusOK {
						t.Fatalf("GET %s: %d %s", key, a.status, a.body)
					}
					id := idOf[a.body]
					if prev, ok := where[key]; ok && prev != id {
						t.Fatalf("key %s went to %s, then to %s", key, prev, id)
					}
					where[key] = id
				}
				if want := affinity.Pick("single", 0, key, ids); where[key] != want {
					t.Fatalf("key %s on %s, want %s (rendezvous)", key, where[key], want)
				}
				used[where[key]]++
			}
			if len(used) != 3 {
				t.Fatalf("24 keys on %d replicas (%v), want all 3", len(used), used)
			}
			// Calls no rule matches are balanced as always.
			seen := map[string]bool{}
			for range 6 {
				seen[do(t, c, http.MethodGet, gs.Advertise+"/other").body] = true
			}
			if len(seen) < 2 {
				t.Fatalf("unmatched calls all went to %v", seen)
			}

			// A draining replica leaves the ranking: its keys move to their
			// next replica; activated again, they come back.
			if err := e.b.Drain("single", ids[0]); err != nil {
				t.Fatal(err)
			}
			e.waitState("single", ids[0], protocol.StateDraining)
			for key, before := range where {
				a := do(t, c, http.MethodGet, gs.Advertise+"/objects/"+key+"/x")
				if want := affinity.Pick("single", 0, key, ids[1:]); idOf[a.body] != want {
					t.Errorf("key %s (on %s) went to %s while %s drained, want %s", key, before, idOf[a.body], ids[0], want)
				}
			}
			if err := e.b.Activate("single", ids[0]); err != nil {
				t.Fatal(err)
			}
			e.waitState("single", ids[0], protocol.StateActive)

			dead := ids[1]
			srvOf[dead].Close()
			e.waitState("single", dead, protocol.StateDown)
			live := []string{ids[0], ids[2]}
			for key, before := range where {
				a := do(t, c, http.MethodGet, gs.Advertise+"/objects/"+key+"/x")
				if a.status != http.StatusOK {
					t.Fatalf("GET %s after the kill: %d %s", key, a.status, a.body)
				}
				now := idOf[a.body]
				switch {
				case before != dead && now != before:
					t.Errorf("key %s moved from %s to %s, its replica lives", key, before, now)
				case before == dead && now != affinity.Ranking("single", 0, key, ids)[1]:
					t.Errorf("key %s moved to %s, want its next in ranking %v", key, now, affinity.Ranking("single", 0, key, ids))
				case now != affinity.Pick("single", 0, key, live):
					t.Errorf("key %s on %s", key, now)
				}
			}
		})
	}
}

// TestAffinityClientActivated: objects created by a 201's Location and by
// a cookie stay on the replica that created them (round-robin would rotate
// them); idle past the rule's timeout (on the balancer's clock) they are
// balanced again; when their replica dies, a call gets 410 Gone once and
// the entry is dropped.
func TestAffinityClientActivated(t *testing.T) {
	t.Parallel()
	for _, engine := range affinityEngines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			e := newEnv(t, envOptions{engine: engine, clock: clk})
			gs := e.mustPutGroup(affinityGroup("objs",
				protocol.AffinityRule{Kind: protocol.AffinityClientActivated, Match: "/objects/{id}", Timeout: protocol.Duration(time.Minute)},
				protocol.AffinityRule{Kind: protocol.AffinityClientActivated, Match: "/cart/{rest...}", Cookie: "sess", Timeout: protocol.Duration(time.Minute)},
			))
			idOf, srvOf := map[string]string{}, map[string]*httptest.Server{}
			for _, name := range []string{"a", "b", "c"} {
				srv := objectReplica(t, name)
				id := e.mustRegister("objs", srv.URL).ID
				idOf[name], srvOf[id] = id, srv
				e.waitState("objs", id, protocol.StateActive)
			}
			c := httpClient(t)

			// Created by 201 Location.
			created := do(t, c, http.MethodPost, gs.Advertise+"/objects/")
			if created.status != http.StatusCreated {
				t.Fatalf("POST: %d %s", created.status, created.body)
			}
			loc := created.header.Get("Location")
			owner := created.body
			for range 5 {
				if a := do(t, c, http.MethodGet, gs.Advertise+loc); a.body != owner {
					t.Fatalf("GET %s answered by %s (%d), created on %s", loc, a.body, a.status, owner)
				}
			}
			// Its replica drains: the object stays on it.
			if err := e.b.Drain("objs", idOf[owner]); err != nil {
				t.Fatal(err)
			}
			e.waitState("objs", idOf[owner], protocol.StateDraining)
			if a := do(t, c, http.MethodGet, gs.Advertise+loc); a.body != owner {
				t.Fatalf("GET %s answered by %s (%d) while %s drained, want it", loc, a.body, a.status, owner)
			}
			if err := e.b.Activate("objs", idOf[owner]); err != nil {
				t.Fatal(err)
			}
			e.waitState("objs", idOf[owner], protocol.StateActive)
			// Created by cookie.
			login := do(t, c, http.MethodPost, gs.Advertise+"/login")
			var sess *http.Cookie
			for _, ck := range (&http.Response{Header: login.header}).Cookies() {
				if ck.Name == "sess" {
					sess = ck
				}
			}
			if sess == nil {
				t.Fatalf("login set no sess cookie: %v", login.header)
			}
			for range 5 {
				if a := do(t, c, http.MethodGet, gs.Advertise+"/cart/items", sess); a.body != login.body {
					t.Fatalf("cart answered by %s, cookie set by %s", a.body, login.body)
				}
			}

			// Idle for the timeout: the group's loop expires both entries
			// (on the balancer's clock), and the cart is balanced again.
			if n := e.b.AffinityEntries("objs"); n != 2 {
				t.Fatalf("%d entries, want the object and the cart", n)
			}
			clk.Advance(time.Minute)
			eventually(t, 5*time.Second, func() error {
				if n := e.b.AffinityEntries("objs"); n != 0 {
					return fmt.Errorf("%d entries a minute idle", n)
				}
				return nil
			})
			seen := map[string]bool{}
			for range 6 {
				seen[do(t, c, http.MethodGet, gs.Advertise+"/cart/items", sess).body] = true
			}
			if len(seen) < 2 {
				t.Fatalf("after the timeout the cart still went only to %v", seen)
			}

			// A fresh object; its replica dies: 410 once, then balanced.
			created = do(t, c, http.MethodPost, gs.Advertise+"/objects/")
			loc, owner = created.header.Get("Location"), created.body
			srvOf[idOf[owner]].Close()
			e.waitState("objs", idOf[owner], protocol.StateDown)
			a := do(t, c, http.MethodGet, gs.Advertise+loc)
			if a.status != http.StatusGone || errorCode(t, a) != httpdoor.CodeGone || !strings.Contains(a.body, idOf[owner]) {
				t.Fatalf("GET %s after its replica died: %d %s, want 410 gone naming %s", loc, a.status, a.body, idOf[owner])
			}
			if a := do(t, c, http.MethodGet, gs.Advertise+loc); a.status != http.StatusOK || a.body == owner {
				t.Fatalf("GET %s after the 410: %d %s, want 200 from a live replica", loc, a.status, a.body)
			}
		})
	}
}

// TestAffinityTableKeptAcrossReloads: replacing a group with the same
// rules (another strategy) keeps its session table; new rules start an
// empty one.
func TestAffinityTableKeptAcrossReloads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	rule := protocol.AffinityRule{Kind: protocol.AffinityClientActivated, Match: "/objects/{id}"}
	gs := e.mustPutGroup(affinityGroup("reload", rule))
	for _, name := range []string{"a", "b"} {
		id := e.mustRegister("reload", objectReplica(t, name).URL).ID
		e.waitState("reload", id, protocol.StateActive)
	}
	c := httpClient(t)
	created := do(t, c, http.MethodPost, gs.Advertise+"/objects/")
	loc, owner := created.header.Get("Location"), created.body
	pinned := func() bool {
		for range 4 { // round-robin over two would alternate
			if a := do(t, c, http.MethodGet, gs.Advertise+loc); a.status != http.StatusOK || a.body != owner {
				return false
			}
		}
		return true
	}
	if !pinned() {
		t.Fatalf("object %s not pinned to %s", loc, owner)
	}
	same := affinityGroup("reload", rule)
	same.Strategy = strategy.RandomName
	gs = e.mustPutGroup(same)
	if !pinned() {
		t.Fatal("the same rules with another strategy lost the session table")
	}
	other := affinityGroup("reload", rule)
	other.Affinity[0].Timeout = protocol.Duration(time.Hour)
	gs = e.mustPutGroup(other)
	if pinned() {
		t.Fatal("new rules kept the old session table's entry")
	}
}
