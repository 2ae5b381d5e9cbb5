package eft

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func mustGraph(t *testing.T, tasks []Task) *Graph {
	t.Helper()
	g, err := NewGraph(tasks)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// placements renders "id@server" for every task, in input order.
func placements(g *Graph, c *Core) string {
	var out []string
	for i := range g.Len() {
		s, _ := c.Placement(i)
		out = append(out, fmt.Sprintf("%s@%d", g.ID(i), s))
	}
	return strings.Join(out, " ")
}

// dispatched renders a Dispatch result as "id@server".
func dispatched(g *Graph, ds []Dispatch) string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s@%d", g.ID(d.Task), d.Server))
	}
	return strings.Join(out, " ")
}

func TestPlanByHand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tasks   []Task
		servers int
		k       int
		ranks   []float64
		want    string
	}{
		{
			// a(10) → b(20) over c=5, a → c(10) over 5, b → d(5) over 2, c → d over 2.
			// Ranks: d = 5; b = 20+2+5 = 27; c = 10+2+5 = 17; a = 10 + max(5+27, 5+17) = 42.
			// Order a, b, c, d. Two servers, k = 2.
			//   a: EFT 10 on both → s0 (lowest index); s0 runs a in [0,10].
			//   b: s0: ready 10 (same server), alone → 30; s1: ready 10+5 = 15 → 35. s0, [10,30].
			//   c: s0: ready 10, b runs there → half speed → 10 at 1/2 = 20 → 30;
			//      s1: ready 15, alone → 25. s1, [15,25].
			//   d: s0: ready max(30, 25+2) = 30 → 35; s1: ready max(30+2, 25) = 32 → 37. s0.
			name: "fork-join", servers: 2, k: 2,
			tasks: []Task{
				{ID: "a", Cost: 10},
				{ID: "b", Cost: 20, After: []Edge{{From: "a", Cost: 5}}},
				{ID: "c", Cost: 10, After: []Edge{{From: "a", Cost: 5}}},
				{ID: "d", Cost: 5, After: []Edge{{From: "b", Cost: 2}, {From: "c", Cost: 2}}},
			},
			ranks: []float64{42, 27, 17, 5},
			want:  "a@0 b@0 c@1 d@0",
		},
		{
			// Independent tasks: x(30) in state group G1, y(10) in G2, z(20) in G3,
			// t(5) stateless. Ranks = costs; groups ordered by their first task's
			// rank: G1, G3, G2. Phase 1, two servers:
			//   G1: AddLoad 30, 30 → s0 (loads 30, 0);
			//   G3: AddLoad s0 50, s1 20 → s1 (30, 20);
			//   G2: AddLoad s0 40, s1 30 → s1 (30, 30).
			// Phase 2 (k = 2), order x, z, y, t:
			//   x on s0 [0,30]; z on s1 [0,20]; y on s1 beside z at half speed:
			//   10 takes 20 → [0,20];
			//   t: s0 beside x at half speed → 10; s1 runs k = 2 until 20 → 25. s0.
			name: "stateful groups by load", servers: 2, k: 2,
			tasks: []Task{
				{ID: "x", Cost: 30, StateGroup: "G1"},
				{ID: "y", Cost: 10, StateGroup: "G2"},
				{ID: "z", Cost: 20, StateGroup: "G3"},
				{ID: "t", Cost: 5},
			},
			ranks: []float64{30, 10, 20, 5},
			want:  "x@0 y@1 z@1 t@0",
		},
		{
			// k = 1, one server busy: a(10) and b(10) independent, c(1) after a
			// over c=100. Ranks a = 111, b = 10, c = 1. Order a, b, c.
			//   a → s0 [0,10]; b: s0 waits until 10 → 20, s1 → 10: s1 [0,10];
			//   c: s0 (a's server, no communication): ready 10, free → 11;
			//      s1: ready 110 → 111. s0.
			name: "communication keeps a successor home", servers: 2, k: 1,
			tasks: []Task{
				{ID: "a", Cost: 10},
				{ID: "b", Cost: 10},
				{ID: "c", Cost: 1, After: []Edge{{From: "a", Cost: 100}}},
			},
			ranks: []float64{111, 10, 1},
			want:  "a@0 b@1 c@0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := mustGraph(t, tt.tasks)
			if got := g.Ranks(); !slices.Equal(got, tt.ranks) {
				t.Errorf("ranks %v, want %v", got, tt.ranks)
			}
			c := NewCore(g, tt.servers, tt.k, t0)
			if got := placements(g, c); got != tt.want {
				t.Errorf("placements %s, want %s", got, tt.want)
			}
		})
	}
}

// The fork-join graph of TestPlanByHand driven through its run: Dispatch
// hands out what is ready on the planned servers, Done releases
// successors.
func TestCoreRun(t *testing.T) {
	t.Parallel()
	g := mustGraph(t, []Task{
		{ID: "a", Cost: 10},
		{ID: "b", Cost: 20, After: []Edge{{From: "a", Cost: 5}}},
		{ID: "c", Cost: 10, After: []Edge{{From: "a", Cost: 5}}},
		{ID: "d", Cost: 5, After: []Edge{{From: "b", Cost: 2}, {From: "c", Cost: 2}}},
	})
	c := NewCore(g, 2, 2, t0)
	idx := func(id string) int { i, _ := g.Index(id); return i }
	steps := []struct {
		now  float64
		done string // reported Done before Dispatch
		want string
	}{
		{0, "", "a@0"},
		{1, "", ""},
		{10, "a", "b@0 c@1"},
		{25, "c", ""}, // d waits for b
		{31, "b", "d@0"},
		{36, "d", ""},
	}
	for _, s := range steps {
		if s.done != "" {
			c.Done(idx(s.done), at(s.now))
		}
		if got := dispatched(g, c.Dispatch(at(s.now))); got != s.want {
			t.Fatalf("at %vms after %q done: Dispatch %q, want %q", s.now, s.done, got, s.want)
		}
	}
	if !c.Finished() {
		t.Error("not Finished after every task is done")
	}
}

// k bounds what runs on a server; the waiting task goes first in rank
// order once a slot frees.
func TestCoreRespectsK(t *testing.T) {
	t.Parallel()
	// One server, k = 1: a(1) → b(5), a → c(9), a → d(7). Ranks b 5, c 9, d 7.
	g := mustGraph(t, []Task{
		{ID: "a", Cost: 1},
		{ID: "b", Cost: 5, After: []Edge{{From: "a"}}},
		{ID: "c", Cost: 9, After: []Edge{{From: "a"}}},
		{ID: "d", Cost: 7, After: []Edge{{From: "a"}}},
	})
	c := NewCore(g, 1, 1, t0)
	idx := func(id string) int { i, _ := g.Index(id); return i }
	if got := dispatched(g, c.Dispatch(at(0))); got != "a@0" {
		t.Fatalf("first Dispatch %q", got)
	}
	c.Done(idx("a"), at(1))
	var order []string
	for now := 1.0; !c.Finished(); now++ {
		ds := c.Dispatch(at(now))
		if len(ds) > 1 {
			t.Fatalf("at %v: %d tasks dispatched on a server with k = 1", now, len(ds))
		}
		for _, d := range ds {
			order = append(order, g.ID(d.Task))
			c.Done(d.Task, at(now+1))
		}
	}
	if got := strings.Join(order, ","); got != "c,d,b" {
		t.Errorf("queue order %s, want c,d,b (decreasing rank)", got)
	}
}

func TestCoreFailedSkipsSuccessors(t *testing.T) {
	t.Parallel()
	// a → b → c, b → e, a → d; b fails: c and e are skipped, d still runs.
	g := mustGraph(t, []Task{
		{ID: "a", Cost: 1},
		{ID: "b", Cost: 1, After: []Edge{{From: "a"}}},
		{ID: "c", Cost: 1, After: []Edge{{From: "b"}}},
		{ID: "d", Cost: 1, After: []Edge{{From: "a"}}},
		{ID: "e", Cost: 1, After: []Edge{{From: "b"}, {From: "d"}}},
	})
	c := NewCore(g, 2, 2, t0)
	idx := func(id string) int { i, _ := g.Index(id); return i }
	c.Dispatch(at(0))
	c.Done(idx("a"), at(1))
	if got := dispatched(g, c.Dispatch(at(1))); !strings.Contains(got, "b@") || !strings.Contains(got, "d@") {
		t.Fatalf("Dispatch %q, want b and d", got)
	}
	c.Failed(idx("b"), at(2))
	c.Done(idx("b"), at(2)) // not Running any more: no effect
	for id, want := range map[string]Status{"b": Failed, "c": Skipped, "e": Skipped, "d": Running} {
		if got := c.Status(idx(id)); got != want {
			t.Errorf("status of %s %v, want %v", id, got, want)
		}
	}
	if c.Finished() {
		t.Error("Finished while d runs")
	}
	c.Done(idx("d"), at(3))
	if ds := c.Dispatch(at(3)); len(ds) != 0 {
		t.Errorf("Dispatch after the failure %q, want nothing", dispatched(g, ds))
	}
	if !c.Finished() {
		t.Error("not Finished: d done, b failed, c and e skipped")
	}
}

// A timeout edge splits state group S: p →(timeout 5ms) q → r, q → c
// (c alone in state group C), and b alone in state group B. Three servers,
// k = 1.
//
// Ranks: r = 10, c = 15, q = 10 + max(10, 15) = 25, p = 10 + 25 = 35, b = 50.
// Phase-1 groups in order of their first task's rank: {b} 50, {p} 35,
// {q, r} 25, {c} 15. Phase 1:
//
//	{b}:    AddLoad 50, 50, 50 → s0 (loads 50, 0, 0)
//	{p}:    60, 10, 10         → s1 (50, 10, 0)
//	{q, r}: 70, 30, 20         → s2 (50, 10, 20)
//	{c}:    65, 25, 35         → s1
//
// At 0, b starts on s0 and p on s1; p is done at 10.
//
//   - Session alive: q is dispatched at 12, 2ms < 5ms after p finished: q
//     and r follow p to s1, and phase 1 runs again for {c}, against the
//     remaining loads: s0 has b, running since 0 (50 − 12 = 38), s1 has
//     q and r (20): AddLoad 53, 35, 15 → c moves to s2.
//   - Session expired: q is dispatched at 20, 10ms ≥ 5ms after: q and r stay on
//     s2 from phase 1, phase 1 does not run again, c stays on s1.
func TestTimeoutEdgeRunTimeRule(t *testing.T) {
	t.Parallel()
	tasks := []Task{
		{ID: "b", Cost: 50, StateGroup: "B"},
		{ID: "p", Cost: 10, StateGroup: "S"},
		{ID: "q", Cost: 10, StateGroup: "S", After: []Edge{{From: "p", Timeout: 5 * time.Millisecond}}},
		{ID: "r", Cost: 10, StateGroup: "S", After: []Edge{{From: "q"}}},
		{ID: "c", Cost: 15, StateGroup: "C", After: []Edge{{From: "q"}}},
	}
	tests := []struct {
		name   string
		qAt    float64
		wantQ  string
		placed string
	}{
		{"session alive", 12, "q@1", "b@0 p@1 q@1 r@1 c@2"},
		{"session expired", 20, "q@2", "b@0 p@1 q@2 r@2 c@1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := mustGraph(t, tasks)
			if got, want := g.Ranks(), []float64{50, 35, 25, 10, 15}; !slices.Equal(got, want) {
				t.Fatalf("ranks %v, want %v", got, want)
			}
			c := NewCore(g, 3, 1, t0)
			if got, want := placements(g, c), "b@0 p@1 q@2 r@2 c@1"; got != want {
				t.Fatalf("phase 1 placements %s, want %s", got, want)
			}
			if got := dispatched(g, c.Dispatch(at(0))); got != "b@0 p@1" {
				t.Fatalf("Dispatch at 0: %q, want b@0 p@1", got)
			}
			p, _ := g.Index("p")
			c.Done(p, at(10))
			if got := dispatched(g, c.Dispatch(at(tt.qAt))); got != tt.wantQ {
				t.Fatalf("Dispatch at %v: %q, want %s", tt.qAt, got, tt.wantQ)
			}
			if got := placements(g, c); got != tt.placed {
				t.Errorf("placements %s, want %s", got, tt.placed)
			}
		})
	}
}

// A stateless task's placement is eq. 5 again at dispatch, with actual
// finish times. x (100, state group G), a (10), b (10), c (10) after a over
// c(a,c) = 1; two servers, k = 1. Ranks x 100, a 21, b 10, c 10.
//
// Plan: x on s0 [0,100] (phase 1); a: s0 waits → 110, s1 → 10: s1; b: s0
// 110, s1 after a → 20: s1; c: s0 ready 11, waits for x → 110, s1 after b
// → 30: s1.
//
// Run: at 0 x@0, a@1 (b waits for s1). a done at 10: b@1 (c's EFT is still
// s1's: s0 holds x until about 100). x is done early, at 12: c's EFT on s0
// is now 12 + 10 = 22 against s1's 30 (b has 8 left): c goes to s0.
func TestCoreStatelessFollowsActualTimes(t *testing.T) {
	t.Parallel()
	g := mustGraph(t, []Task{
		{ID: "x", Cost: 100, StateGroup: "G"},
		{ID: "a", Cost: 10},
		{ID: "b", Cost: 10},
		{ID: "c", Cost: 10, After: []Edge{{From: "a", Cost: 1}}},
	})
	c := NewCore(g, 2, 1, t0)
	if got, want := placements(g, c), "x@0 a@1 b@1 c@1"; got != want {
		t.Fatalf("plan %s, want %s", got, want)
	}
	idx := func(id string) int { i, _ := g.Index(id); return i }
	steps := []struct {
		now  float64
		done string
		want string
	}{
		{0, "", "x@0 a@1"},
		{10, "a", "b@1"},
		{12, "x", "c@0"},
	}
	for _, s := range steps {
		if s.done != "" {
			c.Done(idx(s.done), at(s.now))
		}
		if got := dispatched(g, c.Dispatch(at(s.now))); got != s.want {
			t.Fatalf("at %vms: Dispatch %q, want %q", s.now, got, s.want)
		}
	}
}

// The first steps of the paper's worked example (§IV.B, Fig. 9–11), as far
// as its text gives the costs: n1 (w 8) → n2 (w 15, c 18), n1 → n3 (w 7,
// c 12), and n4 stateful, scheduled between n2 and n3 on the server phase
// 1 gave its group (here: n1 → n4, w 10, c 0, so that the ranks order
// n1, n2, n4, n3 as in the paper). Three servers, k = 2.
//
//	n1: EFT 8 on every server (the paper: 8) → s1 (our s0).
//	n2: s1: 15 + (8 + 0) = 23; s2, s3: 15 + (8 + 18) = 41 (the paper's
//	    figures) → s1.
//	n4: on s1 (phase 1), beside n2 at half speed until 23 (7.5 done),
//	    then alone: [8, 25.5].
//	n3: s2: 7 + (8 + 12) = 27 (the paper: 27); s1 runs k = 2 tasks until
//	    23, then n3 shares with n4 until 25.5 (1.25 done) and finishes the
//	    5.75 left alone at 31.25 (the paper: 14 + 18 = 32) → s2 (our s1),
//	    as in the paper.
func TestPaperWorkedExampleFirstSteps(t *testing.T) {
	t.Parallel()
	g := mustGraph(t, []Task{
		{ID: "n1", Cost: 8},
		{ID: "n2", Cost: 15, After: []Edge{{From: "n1", Cost: 18}}},
		{ID: "n3", Cost: 7, After: []Edge{{From: "n1", Cost: 12}}},
		{ID: "n4", Cost: 10, StateGroup: "g1", After: []Edge{{From: "n1"}}},
	})
	var order []string
	for _, i := range g.Order() {
		order = append(order, g.ID(i))
	}
	if got := strings.Join(order, ","); got != "n1,n2,n4,n3" {
		t.Fatalf("order %s, want n1,n2,n4,n3", got)
	}
	c := NewCore(g, 3, 2, t0)
	if got, want := placements(g, c), "n1@0 n2@0 n3@1 n4@0"; got != want {
		t.Errorf("placements %s, want %s", got, want)
	}
	for id, want := range map[string]float64{"n1": 8, "n2": 23, "n3": 27, "n4": 25.5} {
		i, _ := g.Index(id)
		if got := c.Planned(i); got != want {
			t.Errorf("planned finish of %s %v, want %v", id, got, want)
		}
	}
	// n3 on s1 (our s0) would finish at 31.25: the profile of n1, n2, n4 there.
	if _, f := (profile{{0, 8}, {8, 23}, {8, 25.5}}).exec(7, 8, 2); f != 31.25 {
		t.Errorf("EFT(n3, s1) = %v, want 31.25", f)
	}
}
