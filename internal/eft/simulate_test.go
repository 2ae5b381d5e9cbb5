package eft

import (
	"strings"
	"testing"
)

func TestSimulateByHand(t *testing.T) {
	t.Parallel()
	forkJoin := []Task{
		{ID: "a", Cost: 10},
		{ID: "b", Cost: 20, After: []Edge{{From: "a", Cost: 5}}},
		{ID: "c", Cost: 10, After: []Edge{{From: "a", Cost: 5}}},
		{ID: "d", Cost: 5, After: []Edge{{From: "b", Cost: 2}, {From: "c", Cost: 2}}},
	}
	// x1 and x2 in state group G1, y1 in G2, z stateless; all cost 10, no edges.
	sessions := []Task{
		{ID: "x1", Cost: 10, StateGroup: "G1"},
		{ID: "z", Cost: 10},
		{ID: "y1", Cost: 10, StateGroup: "G2"},
		{ID: "x2", Cost: 10, StateGroup: "G1"},
	}
	tests := []struct {
		name    string
		tasks   []Task
		servers int
		k       int
		policy  Policy
		want    float64
	}{
		// EFT places as in TestPlanByHand: a s0 [0,10]; b s0 [10,30]; c s1, data
		// at 10+5 = 15, done 25; d s0, data max(30, 25+2) → 35.
		{"fork-join eft", forkJoin, 2, 2, PolicyEFT, 35},
		// ETT (eq. 1, (w + d)(1 + n_s)): a s0. At 10, b: s0 (20+5)×1 = 25, s1 25
		// → s0 (first of equals), no data to move, done 30; c: s0 15×2 = 30, s1
		// 15 → s1, data at 15, done 25. At 30 d: s0 9, s1 9 → s0, data from c
		// by 27, done 35.
		{"fork-join ett", forkJoin, 2, 2, PolicyETT, 35},
		// Round-robin: a s0; b s1 (data 15, done 35); c s0 (done 20); d s1 (next in
		// turn) at 35, data max(35, 20+2) → 40.
		{"fork-join round-robin", forkJoin, 2, 2, PolicyRoundRobin, 40},
		// EFT: phase 1 puts G1 (20) on s0 and G2 (10) on s1; phase 2: x1 s0
		// [0,10], z s1 [0,10] (s0 would wait for x1), y1 s1 [10,20], x2 s0 [10,20].
		{"sessions eft", sessions, 2, 1, PolicyEFT, 20},
		// ETT: x1 s0; z: s0 20, s1 10 → s1; y1: s0 20, s1 20 → s0; x2 follows
		// its session to s0: s0 runs x1, y1, x2 one after the other → 30.
		{"sessions ett", sessions, 2, 1, PolicyETT, 30},
		// Round-robin: x1 s0, z s1, y1 s0, x2 its session s0 → 30.
		{"sessions round-robin", sessions, 2, 1, PolicyRoundRobin, 30},
		// Processor sharing: two tasks of 10 on one server with k = 2 progress
		// at half speed and both finish at 20; with k = 1 the second waits:
		// also 20.
		{"sharing k=2", []Task{{ID: "a", Cost: 10}, {ID: "b", Cost: 10}}, 1, 2, PolicyRoundRobin, 20},
		{"sharing k=1", []Task{{ID: "a", Cost: 10}, {ID: "b", Cost: 10}}, 1, 1, PolicyEFT, 20},
		// Sharing unequal tasks: 10 and 30 on one server, k = 2: both at half
		// speed until 20 (a done), then b alone with 20 left → 40.
		{"sharing unequal", []Task{{ID: "a", Cost: 10}, {ID: "b", Cost: 30}}, 1, 2, PolicyETT, 40},
		// Zero costs finish at once.
		{"zero costs", []Task{{ID: "a"}, {ID: "b", After: []Edge{{From: "a"}}}}, 2, 2, PolicyEFT, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := mustGraph(t, tt.tasks)
			got, err := Simulate(g, tt.servers, tt.k, tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			if d := got - tt.want; d > 1e-6 || d < -1e-6 {
				t.Errorf("makespan %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSimulateRefuses(t *testing.T) {
	t.Parallel()
	g := mustGraph(t, []Task{{ID: "a", Cost: 1}})
	tests := []struct {
		name       string
		servers, k int
		policy     Policy
		want       string
	}{
		{"no servers", 0, 2, PolicyEFT, "0 servers"},
		{"k 0", 3, 0, PolicyETT, "k=0"},
		{"unknown policy", 3, 2, "fastest", `unknown policy "fastest"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Simulate(g, tt.servers, tt.k, tt.policy)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "eft: ") {
				t.Errorf("Simulate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
