package eft

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// randomTasks is a random DAG of n tasks (edges only from lower to higher
// index), some in state groups, some edges inside a group with timeouts.
func randomTasks(r *rand.Rand, n int) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("t%d", i), Cost: float64(r.IntN(20))}
		if r.IntN(3) == 0 {
			tasks[i].StateGroup = fmt.Sprintf("g%d", r.IntN(3))
		}
		for p := range i {
			if r.IntN(n) < 3 {
				e := Edge{From: tasks[p].ID, Cost: float64(r.IntN(5))}
				if tasks[i].StateGroup != "" && tasks[p].StateGroup == tasks[i].StateGroup && r.IntN(2) == 0 {
					e.Timeout = time.Duration(r.IntN(20)) * time.Millisecond
				}
				tasks[i].After = append(tasks[i].After, e)
			}
		}
	}
	return tasks
}

// TestCoreContract drives Cores over random DAGs with random task
// durations and failures, and checks what an executor relies on: a task
// is dispatched once, only after all its predecessors are done; no server
// runs more than k; the tasks of a phase-1 group run on one server; a
// failure skips exactly the tasks that depend on it; the run finishes.
func TestCoreContract(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 0))
		g, err := NewGraph(randomTasks(r, 1+r.IntN(40)))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		servers, k := 1+r.IntN(4), 1+r.IntN(3)
		c := NewCore(g, servers, k, t0)
		type running struct {
			task   int
			end    float64
			failed bool
		}
		var active []running
		perServer := make([]int, servers)
		dispatched := make([]bool, g.Len())
		groupServer := map[int]int{}
		now := 0.0
		for steps := 0; !c.Finished(); steps++ {
			if steps > 10*g.Len()+10 {
				t.Fatalf("seed %d: not finished after %d steps", seed, steps)
			}
			for _, d := range c.Dispatch(at(now)) {
				if dispatched[d.Task] {
					t.Fatalf("seed %d: %s dispatched twice", seed, g.ID(d.Task))
				}
				dispatched[d.Task] = true
				g.Preds(d.Task, func(p int, _ float64, _ time.Duration) {
					if c.Status(p) != Done {
						t.Fatalf("seed %d: %s dispatched before its predecessor %s is done", seed, g.ID(d.Task), g.ID(p))
					}
				})
				if perServer[d.Server]++; perServer[d.Server] > k {
					t.Fatalf("seed %d: server %d runs %d > k=%d", seed, d.Server, perServer[d.Server], k)
				}
				if grp := g.Group(d.Task); grp >= 0 {
					if s, ok := groupServer[grp]; ok && s != d.Server {
						t.Fatalf("seed %d: phase-1 group %d on servers %d and %d", seed, grp, s, d.Server)
					}
					groupServer[grp] = d.Server
				}
				if s, _ := c.Placement(d.Task); s != d.Server {
					t.Fatalf("seed %d: Placement %d, dispatched on %d", seed, s, d.Server)
				}
				active = append(active, running{d.Task, now + float64(r.IntN(15)), r.IntN(10) == 0})
			}
			if len(active) == 0 {
				t.Fatalf("seed %d: nothing running, nothing dispatched, not finished", seed)
			}
			// End the earliest running task.
			first := 0
			for j, a := range active {
				if a.end < active[first].end {
					first = j
				}
			}
			a := active[first]
			active = append(active[:first], active[first+1:]...)
			now = max(now, a.end)
			s, _ := c.Placement(a.task)
			perServer[s]--
			if a.failed {
				c.Failed(a.task, at(now))
			} else {
				c.Done(a.task, at(now))
			}
		}
		// Skipped exactly when a predecessor failed or was skipped.
		for _, i := range g.Order() {
			bad := false
			g.Preds(i, func(p int, _ float64, _ time.Duration) {
				bad = bad || c.Status(p) == Failed || c.Status(p) == Skipped
			})
			if (c.Status(i) == Skipped) != bad {
				t.Fatalf("seed %d: %s is %v with a failed or skipped predecessor: %v", seed, g.ID(i), c.Status(i), bad)
			}
		}
	}
}
