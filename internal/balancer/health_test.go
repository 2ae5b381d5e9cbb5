package balancer_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// healthyReplica answers /healthz with 200 while healthy is true, 503
// otherwise, and every other path with name, on n.
func healthyReplica(t *testing.T, n *memnet.Network, name string, healthy *atomic.Bool) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			http.Error(w, "sick", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	mux.Handle("/", named(name))
	return newMemReplica(t, n, mux)
}

// stateIs matches a membership event where replica id has state.
func stateIs(id, state string) func(map[string]memberEntry) error {
	return func(r map[string]memberEntry) error {
		if got := r[id].State; got != state {
			return fmt.Errorf("%s is %q, want %s", id, got, state)
		}
		return nil
	}
}

// TestActiveHealth fails a replica's health checks: it goes down, gets no
// new bindings, and comes back when its checks pass again. In a synctest
// bubble: the 20ms health and report intervals pass without waiting.
func TestActiveHealth(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testActiveHealth)
}

func testActiveHealth(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n})
	var healthyA, healthyB atomic.Bool
	healthyA.Store(true)
	healthyB.Store(true)
	urlA := healthyReplica(t, n, "a", &healthyA)
	urlB := healthyReplica(t, n, "b", &healthyB)

	st := e.mustPutGroup(protocol.Group{
		Name: "hc", Strategy: strategy.RoundRobinName, ReportInterval: ms(20),
		Health: protocol.Health{Path: "/healthz", Interval: ms(20), Timeout: ms(20), Rise: 2, Fall: 2},
	})
	events := e.subscribe("hc")
	a := e.mustRegister("hc", urlA)
	b := e.mustRegister("hc", urlB)
	c := memClient(t, n)

	healthyA.Store(false)
	waitEvent(t, events, 5*time.Second, membership(stateIs(a.ID, protocol.StateDown)))
	if got := replicaOf(t, e.mustGroup("hc"), a.ID).State; got != protocol.StateDown {
		t.Errorf("status of a failing replica: %s, want down", got)
	}
	if got := e.b.EligibleIDs("hc"); !slices.Equal(got, []string{b.ID}) {
		t.Errorf("eligible with %s down = %v, want [%s]", a.ID, got, b.ID)
	}
	if seen := redirects(t, c, st.Advertise, 20); seen[a.ID] != 0 {
		t.Errorf("redirects with %s down: %v; want none to it", a.ID, seen)
	}
	if adv := e.mustReport(a.Token, protocol.Report{Load: 1}); adv.Advisory != protocol.Drain {
		t.Errorf("advisory of a down replica: %+v, want drain (its clients are rebound)", adv)
	}

	healthyA.Store(true)
	waitEvent(t, events, 5*time.Second, membership(stateIs(a.ID, protocol.StateActive)))
	if seen := redirects(t, c, st.Advertise, 20); seen[a.ID] == 0 || seen[b.ID] == 0 {
		t.Errorf("redirects after %s recovered: %v; want both (round-robin)", a.ID, seen)
	}
}

// passiveGroup is a per-request round-robin group with a good and a
// failing replica, ejected after 3 failed calls for 200ms.
func passiveGroup(t *testing.T, e *env, n *memnet.Network, name string) passiveSetup {
	t.Helper()
	var failures atomic.Int64
	good := newMemReplica(t, n, named("good"))
	bad := newMemReplica(t, n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failures.Add(1)
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	gs := e.mustPutGroup(protocol.Group{
		Name: name, Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName, ReportInterval: ms(20),
		Health: protocol.Health{Passive: protocol.Passive{ConsecutiveFailures: 3, BaseEjection: ms(200)}},
	})
	return passiveSetup{
		frontDoor: gs.Advertise,
		good:      e.mustRegister(name, good).ID,
		bad:       e.mustRegister(name, bad).ID,
		badCalls:  &failures,
	}
}

// passiveSetup is a group made by passiveGroup: its front door, its
// replicas' ids and the count of calls the failing one got.
type passiveSetup struct {
	frontDoor string
	good, bad string
	badCalls  *atomic.Int64
}

// callUntilEjected calls the front door until the failing replica has
// been called n times.
func callUntilEjected(t *testing.T, c *http.Client, g passiveSetup, n int64) {
	t.Helper()
	start := g.badCalls.Load()
	for i := 0; g.badCalls.Load()-start < n; i++ {
		if i > 200 {
			t.Fatalf("the failing replica got %d calls of 200", g.badCalls.Load()-start)
		}
		a := get(t, c, g.frontDoor+"/work")
		if a.status != http.StatusOK && a.status != http.StatusInternalServerError {
			t.Fatalf("front door answered %d %s", a.status, a.body)
		}
	}
}

// TestPassiveEjection ejects a replica whose calls fail and brings it back
// after the ejection time, which grows with repeats. The balancer's clock
// stands still but when the test moves it, so the ejections end exactly
// when the test says.
// In a synctest bubble (bubble_test.go).
func TestPassiveEjection(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testPassiveEjection)
}

func testPassiveEjection(t *testing.T) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	g := passiveGroup(t, e, n, "pe")
	events := e.subscribe("pe")
	c := memClient(t, n)

	eject := func() {
		t.Helper()
		callUntilEjected(t, c, g, 3)
		waitEvent(t, events, 5*time.Second, membership(stateIs(g.bad, protocol.StateEjected)))
		if got := e.b.EligibleIDs("pe"); !slices.Equal(got, []string{g.good}) {
			t.Fatalf("eligible with %s ejected = %v, want [%s]", g.bad, got, g.good)
		}
		before := g.badCalls.Load()
		for range 20 {
			if a := get(t, c, g.frontDoor+"/work"); a.status != http.StatusOK || a.body != "good" {
				t.Fatalf("call while %s is ejected: %d %q, want the good replica's answer", g.bad, a.status, a.body)
			}
		}
		if n := g.badCalls.Load() - before; n != 0 {
			t.Fatalf("the ejected replica got %d calls", n)
		}
	}
	// stepAt moves the clock by d, waits for a step at the new time and
	// checks the failing replica's state in it.
	stepAt := func(d time.Duration, state string) {
		t.Helper()
		at := clock.Advance(d)
		waitEvent(t, events, 5*time.Second, stepAfter(at, func(r map[string]stepReplica) error {
			if got := r[g.bad].State; got != state {
				return fmt.Errorf("%s is %s at +%s, want %s", g.bad, got, d, state)
			}
			return nil
		}))
	}

	eject()
	stepAt(199*time.Millisecond, protocol.StateEjected)
	stepAt(time.Millisecond, protocol.StateActive) // 200ms: back
	if got := replicaOf(t, e.mustGroup("pe"), g.bad); got.State != protocol.StateActive || got.Counters.Failures < 3 {
		t.Errorf("returned replica: state %s failures %d; want active and the failures counted", got.State, got.Counters.Failures)
	}

	// Failing again at once: the second ejection in a row lasts twice as
	// long.
	eject()
	stepAt(399*time.Millisecond, protocol.StateEjected)
	stepAt(time.Millisecond, protocol.StateActive)
	// The status counts each replica's ejections.
	st := e.mustGroup("pe")
	if bad, good := replicaOf(t, st, g.bad).Ejections, replicaOf(t, st, g.good).Ejections; bad == nil || *bad != 2 || good == nil || *good != 0 {
		t.Errorf("ejections: failing replica %v, good one %v; want 2 and 0", bad, good)
	}
}

// TestPassiveEjectionRealClock is the same on the real clock: an ejected
// replica comes back by itself after base_ejection.
// In a synctest bubble (bubble_test.go).
func TestPassiveEjectionRealClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testPassiveEjectionRealClock)
}

func testPassiveEjectionRealClock(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n})
	g := passiveGroup(t, e, n, "pr")
	events := e.subscribe("pr")
	c := memClient(t, n)

	callUntilEjected(t, c, g, 3)
	ejected := waitEvent(t, events, 5*time.Second, membership(stateIs(g.bad, protocol.StateEjected)))
	back := waitEvent(t, events, 5*time.Second, membership(stateIs(g.bad, protocol.StateActive)))
	if d := back.Time.Sub(ejected.Time); d < 200*time.Millisecond {
		t.Errorf("back after %s, want at least base_ejection (200ms)", d)
	}
	eventually(t, 5*time.Second, func() error {
		if got := e.b.EligibleIDs("pr"); len(got) != 2 {
			return fmt.Errorf("eligible %v, want both replicas", got)
		}
		return nil
	})
}

// TestPassiveEjectionCap fails every replica: at most max_ejected_percent
// of the group is ejected at once.
// In a synctest bubble (bubble_test.go).
func TestPassiveEjectionCap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testPassiveEjectionCap)
}

func testPassiveEjectionCap(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n, clock: newFakeClock()})
	var calls atomic.Int64
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "broken", http.StatusBadGateway)
	})
	st := e.mustPutGroup(protocol.Group{
		Name: "cap", Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName, ReportInterval: ms(20),
		Health: protocol.Health{Passive: protocol.Passive{ConsecutiveFailures: 2, BaseEjection: ms(200), MaxEjectedPercent: 50}},
	})
	for range 4 {
		e.mustRegister("cap", newMemReplica(t, n, failing))
	}
	c := memClient(t, n)
	for range 40 {
		if a := get(t, c, st.Advertise+"/work"); a.status != http.StatusBadGateway {
			t.Fatalf("front door answered %d %s, want the replicas' 502", a.status, a.body)
		}
	}
	ejected := 0
	for _, r := range e.mustGroup("cap").Replicas {
		if r.State == protocol.StateEjected {
			ejected++
		}
	}
	if ejected != 2 || len(e.b.EligibleIDs("cap")) != 2 {
		t.Errorf("%d of 4 failing replicas ejected (eligible %v), want 2 (50%%)", ejected, e.b.EligibleIDs("cap"))
	}
}

// TestHealthPathRemoved: a replica down by its health checks is active
// again once the group stops checking, for the front door and for the
// advisory its monitor gets alike. In a synctest bubble.
func TestHealthPathRemoved(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testHealthPathRemoved)
}

func testHealthPathRemoved(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n})
	var healthy atomic.Bool
	url := healthyReplica(t, n, "a", &healthy)
	gs := protocol.Group{
		Name: "nohc", FrontDoor: "127.0.0.1:0", ReportInterval: ms(20),
		Health: protocol.Health{Path: "/healthz", Interval: ms(20), Timeout: ms(20), Rise: 1, Fall: 1},
	}
	e.mustPutGroup(gs)
	events := e.subscribe("nohc")
	a := e.mustRegister("nohc", url)
	waitEvent(t, events, 5*time.Second, membership(stateIs(a.ID, protocol.StateDown)))
	if adv := e.mustReport(a.Token, protocol.Report{Load: 1}); adv.Advisory != protocol.Drain {
		t.Fatalf("advisory of a down replica %+v, want drain", adv)
	}

	gs.Health.Path = ""
	e.mustPutGroup(gs)
	if got := replicaOf(t, e.mustGroup("nohc"), a.ID).State; got != protocol.StateActive {
		t.Errorf("state without health checks: %s, want active", got)
	}
	if got := e.b.EligibleIDs("nohc"); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("eligible without health checks: %v, want [%s]", got, a.ID)
	}
	if adv := e.mustReport(a.Token, protocol.Report{Load: 1}); adv.Advisory != protocol.Nominal {
		t.Errorf("advisory without health checks: %+v, want nominal (the replica is active and takes bindings)", adv)
	}
}
