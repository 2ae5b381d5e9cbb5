package eft

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	sched "github.com/fulcrum-lb/fulcrum/internal/eft"
)

// GraphParams are the parameters of the random work-flow generator of Chen
// et al. §V (Table I), with the values the paper leaves open.
type GraphParams struct {
	// Tasks is v, the number of tasks.
	Tasks int
	// Shape is s: the number of levels is normal with mean √v/s, the
	// tasks per level normal with mean √v·s (each with a standard
	// deviation of a quarter of its mean); the level sizes are then
	// adjusted, one task at a time on random levels, to add up to v.
	Shape float64
	// MinOut and MaxOut bound a task's out-degree (uniform): its
	// successors are drawn from the next two levels (fewer when they hold
	// fewer tasks). A task below the first level left without a
	// predecessor gets one from the level above.
	MinOut, MaxOut int
	// CCR is the communication-to-computation ratio: edge costs are
	// uniform in [0, 2·CCR·MeanCost].
	CCR float64
	// MeanCost is the mean computation cost in ms: task costs are uniform
	// in [1, 2·MeanCost].
	MeanCost float64
	// Groups is the number of state groups; StatefulRatio the share of
	// tasks that are stateful, drawn uniformly, the first Groups of them
	// one to each group (with fewer stateful tasks than groups, some
	// groups stay empty: v = 25 at 25% has 6 stateful tasks for up to 8
	// groups) and the rest spread uniformly.
	Groups        int
	StatefulRatio float64
	// TimeoutShare is the share of edges between two tasks of one state
	// group that are timeout edges, with timeout Timeout. The paper gives
	// neither.
	TimeoutShare float64
	Timeout      time.Duration
}

// Table I's fixed values, and ours for what it leaves open.
const (
	tableIShape    = 1
	tableIMinOut   = 2
	tableIMaxOut   = 4
	tableICCR      = 0.3
	meanCostMS     = 20
	timeoutShare   = 0.5
	defaultTimeout = 20 * time.Millisecond // one mean task
)

// Generate draws one work-flow.
func Generate(r *rand.Rand, p GraphParams) ([]sched.Task, error) {
	if p.Tasks < 1 || p.Tasks > sched.MaxTasks {
		return nil, fmt.Errorf("eft: generate %d tasks, must be in [1, %d]", p.Tasks, sched.MaxTasks)
	}
	if p.Shape <= 0 || p.MinOut < 1 || p.MaxOut < p.MinOut || p.CCR < 0 || p.MeanCost < 1 {
		return nil, fmt.Errorf("eft: generate: invalid parameters %+v", p)
	}
	stateful := int(math.Round(p.StatefulRatio * float64(p.Tasks)))
	if stateful < 0 || stateful > p.Tasks || (stateful > 0 && p.Groups < 1) {
		return nil, fmt.Errorf("eft: generate: %d state groups for %d stateful tasks of %d", p.Groups, stateful, p.Tasks)
	}
	v := p.Tasks
	levels := levelSizes(r, v, p.Shape)
	// Task ids by level.
	byLevel := make([][]int, len(levels))
	tasks := make([]sched.Task, 0, v)
	for l, n := range levels {
		for range n {
			i := len(tasks)
			byLevel[l] = append(byLevel[l], i)
			tasks = append(tasks, sched.Task{ID: fmt.Sprintf("t%d", i), Cost: 1 + r.Float64()*(2*p.MeanCost-1)})
		}
	}
	edgeCost := func() float64 { return r.Float64() * 2 * p.CCR * p.MeanCost }
	hasPred := make([]bool, v)
	for l := 0; l+1 < len(byLevel); l++ {
		var cand []int
		for m := l + 1; m <= l+2 && m < len(byLevel); m++ {
			cand = append(cand, byLevel[m]...)
		}
		for _, i := range byLevel[l] {
			out := min(p.MinOut+r.IntN(p.MaxOut-p.MinOut+1), len(cand))
			for _, j := range r.Perm(len(cand))[:out] {
				s := cand[j]
				tasks[s].After = append(tasks[s].After, sched.Edge{From: tasks[i].ID, Cost: edgeCost()})
				hasPred[s] = true
			}
		}
	}
	for l := 1; l < len(byLevel); l++ {
		for _, i := range byLevel[l] {
			if !hasPred[i] {
				from := byLevel[l-1][r.IntN(len(byLevel[l-1]))]
				tasks[i].After = append(tasks[i].After, sched.Edge{From: tasks[from].ID, Cost: edgeCost()})
			}
		}
	}
	// Stateful tasks and their groups.
	group := make([]int, v)
	for i := range group {
		group[i] = -1
	}
	for n, i := range r.Perm(v)[:stateful] {
		g := n
		if n >= p.Groups {
			g = r.IntN(p.Groups)
		}
		group[i] = g
		tasks[i].StateGroup = fmt.Sprintf("g%d", g+1)
	}
	for i := range tasks {
		for e := range tasks[i].After {
			from := idOf(tasks[i].After[e].From)
			if group[i] >= 0 && group[i] == group[from] && r.Float64() < p.TimeoutShare {
				tasks[i].After[e].Timeout = p.Timeout
			}
		}
	}
	return tasks, nil
}

// idOf is the index of a generated task's id "t<i>".
func idOf(id string) int {
	n := 0
	for _, c := range id[1:] {
		n = n*10 + int(c-'0')
	}
	return n
}

// levelSizes draws the tasks per level (see GraphParams.Shape).
func levelSizes(r *rand.Rand, v int, shape float64) []int {
	meanLevels := math.Sqrt(float64(v)) / shape
	nLevels := int(math.Round(meanLevels + r.NormFloat64()*meanLevels/4))
	nLevels = min(max(nLevels, 1), v)
	meanWidth := math.Sqrt(float64(v)) * shape
	sizes := make([]int, nLevels)
	sum := 0
	for l := range sizes {
		sizes[l] = max(1, int(math.Round(meanWidth+r.NormFloat64()*meanWidth/4)))
		sum += sizes[l]
	}
	for sum < v {
		sizes[r.IntN(nLevels)]++
		sum++
	}
	for sum > v {
		if l := r.IntN(nLevels); sizes[l] > 1 {
			sizes[l]--
			sum--
		}
	}
	return sizes
}
