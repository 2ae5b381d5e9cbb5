package eft

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	sched "github.com/fulcrum-lb/fulcrum/internal/eft"
)

func TestGenerateTableI(t *testing.T) {
	t.Parallel()
	for _, v := range defaultTasks {
		for _, groups := range defaultGroups {
			for _, ratio := range defaultRatios {
				s := setting{ratio: ratio, groups: groups, tasks: v}
				t.Run(rowOf(s, []graphRun{{makespan: [3]float64{1, 1, 1}}}).Name, func(t *testing.T) {
					t.Parallel()
					p := s.params()
					for seed := range uint64(3) {
						tasks, err := Generate(rand.New(rand.NewPCG(seed, 7)), p)
						if err != nil {
							t.Fatal(err)
						}
						checkGenerated(t, p, tasks)
					}
				})
			}
		}
	}
}

// checkGenerated holds a generated work-flow to GraphParams' contract.
func checkGenerated(t *testing.T, p GraphParams, tasks []sched.Task) {
	t.Helper()
	if len(tasks) != p.Tasks {
		t.Fatalf("%d tasks, want %d", len(tasks), p.Tasks)
	}
	g, err := sched.NewGraph(tasks)
	if err != nil {
		t.Fatalf("generated graph refused: %v", err)
	}
	group := map[string]string{}
	stateful, groups := 0, map[string]bool{}
	for _, task := range tasks {
		group[task.ID] = task.StateGroup
		if task.StateGroup != "" {
			stateful++
			groups[task.StateGroup] = true
		}
		if task.Cost < 1 || task.Cost > 2*p.MeanCost {
			t.Errorf("%s: cost %v outside [1, %v]", task.ID, task.Cost, 2*p.MeanCost)
		}
		for _, e := range task.After {
			if e.Cost < 0 || e.Cost > 2*p.CCR*p.MeanCost {
				t.Errorf("%s: edge cost %v outside [0, %v]", task.ID, e.Cost, 2*p.CCR*p.MeanCost)
			}
		}
	}
	if want := int(float64(p.Tasks)*p.StatefulRatio + 0.5); stateful != want {
		t.Errorf("%d stateful tasks, want %d", stateful, want)
	}
	if want := min(p.Groups, stateful); len(groups) != want {
		t.Errorf("%d state groups used, want %d", len(groups), want)
	}
	for _, task := range tasks {
		for _, e := range task.After {
			if e.Timeout > 0 && (task.StateGroup == "" || group[e.From] != task.StateGroup) {
				t.Errorf("%s: timeout edge from %s across state groups", task.ID, e.From)
			}
		}
	}
	entries := 0
	for i := range g.Len() {
		n := 0
		g.Preds(i, func(int, float64, time.Duration) { n++ })
		if n == 0 {
			entries++
		}
	}
	// Only the first level has no predecessors: never every task.
	if p.Tasks > 1 && entries == p.Tasks {
		t.Errorf("every task is an entry task")
	}
}

// The shape: levels ~ √v/s and tasks per level ~ √v·s, so with s = 1 a
// graph of 400 tasks has about 20 entry tasks (the first level) and a
// longest path of about 20 tasks.
func TestGenerateShape(t *testing.T) {
	t.Parallel()
	p := setting{ratio: 0.25, groups: 4, tasks: 400}.params()
	var entries, depth float64
	const n = 20
	for seed := range uint64(n) {
		tasks, err := Generate(rand.New(rand.NewPCG(seed, 1)), p)
		if err != nil {
			t.Fatal(err)
		}
		g, err := sched.NewGraph(tasks)
		if err != nil {
			t.Fatal(err)
		}
		level := make([]int, g.Len())
		deepest := 0
		for _, i := range g.Order() {
			g.Preds(i, func(q int, _ float64, _ time.Duration) { level[i] = max(level[i], level[q]+1) })
			deepest = max(deepest, level[i])
			if level[i] == 0 {
				entries++
			}
		}
		depth += float64(deepest + 1)
	}
	entries, depth = entries/n, depth/n
	if entries < 12 || entries > 28 {
		t.Errorf("mean entry tasks %.1f, want about √400 = 20", entries)
	}
	if depth < 14 || depth > 26 {
		t.Errorf("mean depth %.1f levels, want about √400 = 20", depth)
	}
}

func TestGenerateIsReproducible(t *testing.T) {
	t.Parallel()
	p := setting{ratio: 0.5, groups: 8, tasks: 100}.params()
	a, _ := Generate(rand.New(rand.NewPCG(1, 2)), p)
	b, _ := Generate(rand.New(rand.NewPCG(1, 2)), p)
	c, _ := Generate(rand.New(rand.NewPCG(1, 3)), p)
	if !reflect.DeepEqual(a, b) {
		t.Error("one seed, two graphs")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("two seeds, one graph")
	}
}

func TestGenerateRefuses(t *testing.T) {
	t.Parallel()
	good := setting{ratio: 0.25, groups: 2, tasks: 25}.params()
	tests := []struct {
		name string
		edit func(*GraphParams)
	}{
		{"no tasks", func(p *GraphParams) { p.Tasks = 0 }},
		{"too many tasks", func(p *GraphParams) { p.Tasks = sched.MaxTasks + 1 }},
		{"zero shape", func(p *GraphParams) { p.Shape = 0 }},
		{"out-degree range", func(p *GraphParams) { p.MinOut, p.MaxOut = 4, 2 }},
		{"no groups", func(p *GraphParams) { p.Groups = 0 }},
		{"ratio over 1", func(p *GraphParams) { p.StatefulRatio = 1.5 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := good
			tt.edit(&p)
			if _, err := Generate(rand.New(rand.NewPCG(1, 1)), p); err == nil {
				t.Errorf("Generate(%+v) accepted", p)
			}
		})
	}
}
