package balancer_test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{config: []protocol.Group{{Name: "life", FrontDoor: "127.0.0.1:0"}}, noStart: true})
	if e.b.Ready() {
		t.Error("Ready() before Start")
	}
	if st := e.mustGroup("life"); st.Listening != "" {
		t.Errorf("front door listening on %s before Start", st.Listening)
	}
	if err := e.b.Start(); err != nil {
		t.Fatal(err)
	}
	if !e.b.Ready() || e.mustGroup("life").Listening == "" {
		t.Error("not ready, or no front door, after Start")
	}
	e.close()
	if e.b.Ready() {
		t.Error("Ready() after Shutdown")
	}
	if _, _, err := e.b.PutGroup(protocol.Group{Name: "late", FrontDoor: "127.0.0.1:0"}); !errors.Is(err, balancer.ErrClosed) {
		t.Errorf("PutGroup after Shutdown = %v, want ErrClosed", err)
	}
}

// TestStateSurvivesRestart closes the balancer and its store and opens
// them again on the same directory: groups made through the API and
// registered replicas (ids, tokens, drain) come back; loads do not.
// In a synctest bubble (bubble_test.go).
func TestStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testStateSurvivesRestart)
}

func testStateSurvivesRestart(t *testing.T) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	e.mustPutGroup(protocol.Group{
		Name: "keep", Binding: protocol.PerSession, Strategy: strategy.PowerOfTwoName,
		Params: map[string]any{"bias": 2.0}, ReportInterval: ms(20), JoinToken: "join-keep",
	})
	if _, err := e.b.PatchGroup("keep", protocol.GroupPatch{Params: map[string]any{"bias": 3.0}}); err != nil {
		t.Fatal(err)
	}
	a := e.mustRegisterWith("keep", protocol.Registration{Address: "http://127.0.0.1:9001", Weight: 2})
	b := e.mustRegister("keep", "http://127.0.0.1:9002")
	if err := e.b.Drain("keep", b.ID); err != nil {
		t.Fatal(err)
	}
	events := e.subscribe("keep")
	e.mustReport(a.Token, protocol.Report{Load: 5})
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), func(r map[string]stepReplica) error {
		if r[a.ID].Load == nil {
			return errors.New("load not reported yet")
		}
		return nil
	}))

	e2 := e.reopen(envOptions{net: n, clock: clock, noStart: true})
	st := e2.mustGroup("keep")
	if st.Source != protocol.SourceAPI || st.Binding != protocol.PerSession || st.Strategy != strategy.PowerOfTwoName ||
		paramsJSON(t, st.Params) != defaultsJSON(t, strategy.PowerOfTwoName, map[string]any{"bias": 3.0}) || st.ReportInterval != ms(20) {
		t.Errorf("group after restart: source %s binding %s strategy %s params %s interval %s",
			st.Source, st.Binding, st.Strategy, paramsJSON(t, st.Params), st.ReportInterval)
	}
	if ids := replicaIDs(st); !sameIDs(ids, a.ID, b.ID) {
		t.Fatalf("replicas after restart = %v, want %s and %s", ids, a.ID, b.ID)
	}
	ra, rb := replicaOf(t, st, a.ID), replicaOf(t, st, b.ID)
	if ra.Weight != 2 || ra.State != protocol.StateActive || rb.State != protocol.StateDraining {
		t.Errorf("after restart: %s weight %v state %s, %s state %s; want weight 2 active, draining", a.ID, ra.Weight, ra.State, b.ID, rb.State)
	}
	if ra.Load != nil || ra.ReportAgeMS != nil {
		t.Errorf("load survived the restart: %v (age %v)", *ra.Load, ra.ReportAgeMS)
	}

	if err := e2.b.Start(); err != nil {
		t.Fatal(err)
	}
	events2 := e2.subscribe("keep")
	waitEvent(t, events2, 5*time.Second, stepAfter(clock.Now(), func(r map[string]stepReplica) error {
		if r[a.ID].Load != nil {
			return fmt.Errorf("%s reported before any report since the restart", a.ID)
		}
		return nil
	}))
	if adv := e2.mustReport(a.Token, protocol.Report{Load: 1}); adv.Advisory != protocol.Nominal {
		t.Errorf("advisory after restart %+v, want nominal", adv)
	}
	if adv := e2.mustReport(b.Token, protocol.Report{Load: 1}); adv.Advisory != protocol.Drain {
		t.Errorf("drained replica's advisory after restart %+v, want drain", adv)
	}
	if !e2.b.JoinAllowed("keep", "join-keep") {
		t.Error("the group's join token was lost in the restart")
	}
	again := e2.mustRegisterWith("keep", protocol.Registration{Address: "http://127.0.0.1:9001", Replace: true})
	if again.ID != a.ID {
		t.Errorf("replace after restart gave id %s, want %s", again.ID, a.ID)
	}
}

func TestDeletedGroupStaysDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "gone"})
	e.mustRegister("gone", "http://127.0.0.1:9001")
	if err := e.b.DeleteGroup("gone"); err != nil {
		t.Fatal(err)
	}
	e2 := e.reopen(envOptions{})
	if _, err := e2.b.Group("gone"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Fatalf("deleted group after restart: %v, want ErrUnknownGroup", err)
	}
	// Its replicas went with it.
	if st := e2.mustPutGroup(protocol.Group{Name: "gone"}); len(st.Replicas) != 0 {
		t.Errorf("a new group of a deleted one's name has its replicas: %v", replicaIDs(st))
	}
}

// sameIDs reports whether got holds exactly want, in any order (a
// restart lists replicas in the store's order).
func sameIDs(got []string, want ...string) bool {
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)))
}

// configGroup is a group as declared in a config file.
func configGroup(statics ...string) protocol.Group {
	g := protocol.Group{
		Name: "cfg", FrontDoor: "127.0.0.1:0", Strategy: strategy.LeastLoadedName,
		Params: map[string]any{"dampening": 0.25}, ReportInterval: ms(20),
	}
	for _, a := range statics {
		g.Replicas = append(g.Replicas, protocol.StaticReplica{Address: a})
	}
	return g
}

// staticIDs returns the ids of a group's static replicas by address.
func staticIDs(st protocol.GroupStatus) map[string]string {
	ids := map[string]string{}
	for _, r := range st.Replicas {
		if r.Static {
			ids[r.Address] = r.ID
		}
	}
	return ids
}

// TestApplyConfig: the config file wins for what it declares. A run-time
// change to a declared group (with a warning) is reverted at the next
// start; static replicas keep their ids across restarts and go when the
// file drops them; replicas that registered at run time stay.
func TestApplyConfig(t *testing.T) {
	t.Parallel()
	const s1, s2 = "http://127.0.0.1:9101", "http://127.0.0.1:9102"
	e := newEnv(t, envOptions{config: []protocol.Group{configGroup(s1, s2)}})
	st := e.mustGroup("cfg")
	if st.Source != protocol.SourceConfig || st.Listening == "" {
		t.Fatalf("config group: source %q listening %q", st.Source, st.Listening)
	}
	ids := staticIDs(st)
	if len(ids) != 2 || ids[s1] == "" || ids[s2] == "" {
		t.Fatalf("static replicas %v, want %s and %s", ids, s1, s2)
	}
	dyn := e.mustRegister("cfg", "http://127.0.0.1:9103")

	rr := strategy.RoundRobinName
	pst, err := e.b.PatchGroup("cfg", protocol.GroupPatch{Strategy: &rr})
	if err != nil {
		t.Fatal(err)
	}
	if pst.Warning == "" || !strings.Contains(pst.Warning, "reverted") || pst.Strategy != rr {
		t.Errorf("patching a config group: warning %q strategy %s; want the change, with a warning", pst.Warning, pst.Strategy)
	}
	put, _, err := e.b.PutGroup(configGroup(s1, s2))
	if err != nil {
		t.Fatal(err)
	}
	if put.Warning == "" || put.Source != protocol.SourceConfig {
		t.Errorf("PutGroup over a config group: warning %q source %q; want a warning, source config", put.Warning, put.Source)
	}
	if _, err := e.b.PatchGroup("cfg", protocol.GroupPatch{Strategy: &rr}); err != nil {
		t.Fatal(err)
	}

	// Restart without applying the file: the run-time change is stored.
	e2 := e.reopen(envOptions{noStart: true})
	if got := e2.mustGroup("cfg").Strategy; got != rr {
		t.Fatalf("stored strategy %s, want the run-time change (%s)", got, rr)
	}
	// Restart with the file, which now drops s2: reverted.
	e3 := e2.reopen(envOptions{config: []protocol.Group{configGroup(s1)}})
	st3 := e3.mustGroup("cfg")
	if st3.Strategy != strategy.LeastLoadedName || paramsJSON(t, st3.Params) != defaultsJSON(t, strategy.LeastLoadedName, map[string]any{"dampening": 0.25}) {
		t.Errorf("after ApplyConfig: strategy %s params %s; want the file's", st3.Strategy, paramsJSON(t, st3.Params))
	}
	if got := staticIDs(st3); len(got) != 1 || got[s1] != ids[s1] {
		t.Errorf("static replicas after the file dropped %s: %v; want only %s as %s", s2, got, s1, ids[s1])
	}
	if r := replicaOf(t, st3, dyn.ID); r.Static {
		t.Errorf("registered replica %s became static", dyn.ID)
	}
	if _, err := e3.b.Report(dyn.Token, protocol.Report{Load: 1}); err != nil {
		t.Errorf("registered replica's token after ApplyConfig: %v", err)
	}

	// And s2 is gone from the store, not only from memory.
	e4 := e3.reopen(envOptions{noStart: true})
	if got := replicaIDs(e4.mustGroup("cfg")); !sameIDs(got, ids[s1], dyn.ID) {
		t.Errorf("replicas after another restart: %v, want %s and %s", got, ids[s1], dyn.ID)
	}
}

func TestApplyConfigRejectsInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noStart: true})
	bad := configGroup()
	bad.Binding = "sometimes"
	err := e.b.ApplyConfig([]protocol.Group{bad})
	var fe *protocol.FieldError
	if !errors.As(err, &fe) || fe.Field != "binding" || !strings.Contains(err.Error(), "cfg") {
		t.Fatalf("ApplyConfig = %v, want a *protocol.FieldError for binding naming the group", err)
	}
}

// TestFailedCreateLeavesNoReplicas: a group with static replicas whose
// front door cannot listen is not created, and leaves nothing in the
// store: created again on a free port and restarted, it has its static
// replica once.
func TestFailedCreateLeavesNoReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	gs := protocol.Group{Name: "orphan", FrontDoor: ln.Addr().String(), Replicas: []protocol.StaticReplica{{Address: "http://127.0.0.1:9201"}}}
	if _, _, err := e.b.PutGroup(gs); !errors.Is(err, balancer.ErrFrontDoor) {
		t.Fatalf("PutGroup on a busy port = %v, want ErrFrontDoor", err)
	}
	gs.FrontDoor = "127.0.0.1:0"
	if st := e.mustPutGroup(gs); len(st.Replicas) != 1 {
		t.Fatalf("replicas %v, want the one static replica", replicaIDs(st))
	}
	e2 := e.reopen(envOptions{})
	if st := e2.mustGroup("orphan"); len(st.Replicas) != 1 {
		t.Errorf("after a restart the group has replicas %v for its one static replica", replicaIDs(st))
	}
}

// TestRemovalSurvivesRestart: a replica being removed (DELETE: drain, then
// remove) that the balancer restarts under does not come back active.
// In a synctest bubble (bubble_test.go).
func TestRemovalSurvivesRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testRemovalSurvivesRestart)
}

func testRemovalSurvivesRestart(t *testing.T) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	e.mustPutGroup(protocol.Group{Name: "rmr", ReportInterval: ms(20)})
	a := e.mustRegister("rmr", "http://127.0.0.1:9301")
	e.mustRegister("rmr", "http://127.0.0.1:9302")
	// Busy: the removal waits for it to go idle.
	e.mustReport(a.Token, protocol.Report{Load: 10, Metrics: map[string]float64{protocol.MetricRPS: 10}})
	events := e.subscribe("rmr")
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), func(r map[string]stepReplica) error {
		if r[a.ID].Load == nil {
			return errors.New("not reported yet")
		}
		return nil
	}))
	if err := e.b.RemoveReplica("rmr", a.ID); err != nil {
		t.Fatal(err)
	}

	e2 := e.reopen(envOptions{net: n, clock: clock, noStart: true})
	for _, r := range e2.mustGroup("rmr").Replicas {
		if r.ID == a.ID && r.State == protocol.StateActive {
			t.Fatalf("replica %s, removed before the restart, is back active", a.ID)
		}
	}
	if slices.Contains(e2.b.EligibleIDs("rmr"), a.ID) {
		t.Errorf("replica %s, removed before the restart, takes new bindings", a.ID)
	}
}

// TestApplyConfigDropsUndeclaredGroups: a config group that is no longer in
// the file is deleted at the next start (the file wins); API groups stay.
func TestApplyConfigDropsUndeclaredGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{config: []protocol.Group{configGroup("http://127.0.0.1:9111")}})
	e.mustPutGroup(protocol.Group{Name: "api", FrontDoor: "127.0.0.1:0"})
	e2 := e.reopen(envOptions{config: []protocol.Group{}})
	names := []string{}
	for _, g := range e2.b.Groups() {
		names = append(names, g.Name)
	}
	if len(names) != 1 || names[0] != "api" {
		t.Fatalf("groups after the file dropped cfg: %v, want [api]", names)
	}
	e3 := e2.reopen(envOptions{noStart: true})
	if _, err := e3.b.Group("cfg"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Fatalf("cfg after another restart: %v, want ErrUnknownGroup (deleted from the store)", err)
	}
}
