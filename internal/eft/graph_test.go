package eft

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestNewGraphRefuses(t *testing.T) {
	t.Parallel()
	tooMany := make([]Task, MaxTasks+1)
	for i := range tooMany {
		tooMany[i] = Task{ID: fmt.Sprintf("t%d", i), Cost: 1}
	}
	tests := []struct {
		name     string
		tasks    []Task
		task     string // the task the error must name
		contains string
	}{
		{"empty", nil, "", "at least one task"},
		{"empty id", []Task{{ID: "a"}, {ID: ""}}, "", "empty id"},
		{"duplicate id", []Task{{ID: "a"}, {ID: "b"}, {ID: "a"}}, "a", "duplicate id"},
		{"unknown id", []Task{{ID: "a"}, {ID: "b", After: []Edge{{From: "zz"}}}}, "b", `unknown task "zz"`},
		{"self edge", []Task{{ID: "a", After: []Edge{{From: "a"}}}}, "a", "cycle"},
		{"repeated edge", []Task{{ID: "a"}, {ID: "b", After: []Edge{{From: "a"}, {From: "a"}}}}, "b", "twice"},
		{"negative cost", []Task{{ID: "a", Cost: -1}}, "a", "cost -1"},
		{"NaN cost", []Task{{ID: "a", Cost: math.NaN()}}, "a", "cost NaN"},
		{"infinite cost", []Task{{ID: "a", Cost: math.Inf(1)}}, "a", "cost +Inf"},
		{"negative edge cost", []Task{{ID: "a"}, {ID: "b", After: []Edge{{From: "a", Cost: -2}}}}, "b", "cost -2"},
		{"infinite edge cost", []Task{{ID: "a"}, {ID: "b", After: []Edge{{From: "a", Cost: math.Inf(-1)}}}}, "b", "cost -Inf"},
		{"negative timeout", []Task{{ID: "a", StateGroup: "s"}, {ID: "b", StateGroup: "s", After: []Edge{{From: "a", Timeout: -time.Second}}}}, "b", "timeout -1s"},
		{"timeout across groups", []Task{{ID: "a", StateGroup: "s"}, {ID: "b", StateGroup: "t", After: []Edge{{From: "a", Timeout: time.Second}}}}, "b", "one state group"},
		{"timeout into stateless", []Task{{ID: "a"}, {ID: "b", After: []Edge{{From: "a", Timeout: time.Second}}}}, "b", "one state group"},
		{"too many", tooMany, fmt.Sprintf("t%d", MaxTasks), "at most 10000"},
		// x is upstream of the cycle, z downstream: neither is on it.
		{"cycle", []Task{
			{ID: "x"},
			{ID: "a", After: []Edge{{From: "x"}, {From: "c"}}},
			{ID: "b", After: []Edge{{From: "a"}}},
			{ID: "c", After: []Edge{{From: "b"}}},
			{ID: "z", After: []Edge{{From: "c"}}},
		}, "", "on a cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := NewGraph(tt.tasks)
			var ge *GraphError
			if !errors.As(err, &ge) {
				t.Fatalf("NewGraph = %v, %v; want a *GraphError", g, err)
			}
			if !strings.Contains(ge.Reason, tt.contains) {
				t.Errorf("reason %q, want it to contain %q", ge.Reason, tt.contains)
			}
			if tt.name == "cycle" {
				if ge.Task != "a" && ge.Task != "b" && ge.Task != "c" {
					t.Errorf("cycle error names %q, not a task on the cycle a→b→c", ge.Task)
				}
			} else if ge.Task != tt.task {
				t.Errorf("error names task %q, want %q", ge.Task, tt.task)
			}
			if want := fmt.Sprintf("task %q: ", ge.Task); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q, want prefix %q", err.Error(), want)
			}
		})
	}
}

func TestNewGraphAcceptsMaxTasks(t *testing.T) {
	t.Parallel()
	tasks := make([]Task, MaxTasks)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("t%d", i), Cost: 1}
		if i > 0 {
			tasks[i].After = []Edge{{From: tasks[i-1].ID}}
		}
	}
	g, err := NewGraph(tasks)
	if err != nil {
		t.Fatal(err)
	}
	// A chain of 10,000 tasks of cost 1: the entry's rank is 10,000.
	if g.Len() != MaxTasks || g.Ranks()[0] != MaxTasks {
		t.Errorf("Len %d, rank of the entry %v; want %d and %d", g.Len(), g.Ranks()[0], MaxTasks, MaxTasks)
	}
}

// The paper's Fig. 9 is a picture whose costs the text does not give; its
// ranks are stated: n1 = 93, n2 = 77, n3 = 63, n4 = 71, n5 = 53, n6 = 57,
// n7 = 43, n8 = 32, n9 = 31, n10 = 27, n11 = 8, scheduled as
// ⟨n1, n2, n4, n3, n6, n5, n7, n8, n9, n10, n11⟩. This graph has those
// ranks: n11 (w 8) is the exit; n2..n10 each lead to n11 with
// rank = w + c(i,11) + 8; n1 (w 8) leads to all of them, and
// max(c(1,j) + rank(n_j)) = c(1,2) + 77 = 8 + 77 = 85, so rank(n1) = 93.
func TestRanksPaperOrder(t *testing.T) {
	t.Parallel()
	wantRank := map[string]float64{"n1": 93, "n2": 77, "n3": 63, "n4": 71, "n5": 53, "n6": 57, "n7": 43, "n8": 32, "n9": 31, "n10": 27, "n11": 8}
	w := map[string]float64{"n2": 15, "n3": 7}
	tasks := []Task{{ID: "n1", Cost: 8}}
	var toExit []Edge
	for j := 2; j <= 10; j++ {
		id := fmt.Sprintf("n%d", j)
		wj, ok := w[id]
		if !ok {
			wj = 10
		}
		c1 := 0.0
		if id == "n2" {
			c1 = 8
		}
		tasks = append(tasks, Task{ID: id, Cost: wj, After: []Edge{{From: "n1", Cost: c1}}})
		toExit = append(toExit, Edge{From: id, Cost: wantRank[id] - wj - 8})
	}
	tasks = append(tasks, Task{ID: "n11", Cost: 8, After: toExit})
	g, err := NewGraph(tasks)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range g.Ranks() {
		if r != wantRank[g.ID(i)] {
			t.Errorf("rank(%s) = %v, want %v", g.ID(i), r, wantRank[g.ID(i)])
		}
	}
	var order []string
	for _, i := range g.Order() {
		order = append(order, g.ID(i))
	}
	if got, want := strings.Join(order, ","), "n1,n2,n4,n3,n6,n5,n7,n8,n9,n10,n11"; got != want {
		t.Errorf("order %s, want the paper's %s", got, want)
	}
}

// Zero-cost tasks over zero-cost edges tie on rank; the order still puts
// every task after its predecessors.
func TestOrderIsTopologicalOnTies(t *testing.T) {
	t.Parallel()
	g, err := NewGraph([]Task{
		{ID: "c", After: []Edge{{From: "b"}}},
		{ID: "b", After: []Edge{{From: "a"}}},
		{ID: "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, i := range g.Order() {
		order = append(order, g.ID(i))
	}
	if got := strings.Join(order, ","); got != "a,b,c" {
		t.Errorf("order %s, want a,b,c", got)
	}
}

// Phase-1 groups: state group s is p →(timeout) q → r, plus u after p
// (not after q). The timeout edge into q splits s into {p, u} and {q, r}.
func TestGroupsSplitAtTimeoutEdges(t *testing.T) {
	t.Parallel()
	g, err := NewGraph([]Task{
		{ID: "p", Cost: 1, StateGroup: "s"},
		{ID: "q", Cost: 1, StateGroup: "s", After: []Edge{{From: "p", Timeout: time.Second}}},
		{ID: "r", Cost: 1, StateGroup: "s", After: []Edge{{From: "q"}}},
		{ID: "u", Cost: 1, StateGroup: "s", After: []Edge{{From: "p"}}},
		{ID: "x", Cost: 1},
		{ID: "v", Cost: 1, StateGroup: "other", After: []Edge{{From: "x"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b string) bool {
		i, _ := g.Index(a)
		j, _ := g.Index(b)
		return g.Group(i) == g.Group(j)
	}
	x, _ := g.Index("x")
	switch {
	case !same("p", "u"), !same("q", "r"), same("p", "q"), same("v", "p"), same("v", "q"):
		t.Errorf("groups %v: want {p,u}, {q,r}, {v}", g.Groups())
	case g.Group(x) != -1:
		t.Errorf("stateless x in group %d", g.Group(x))
	case len(g.Groups()) != 3:
		t.Errorf("%d groups, want 3", len(g.Groups()))
	}
}
