package eft

import (
	"fmt"
	"math"
	"time"
)

// MaxTasks is the most tasks a work-flow may have.
const MaxTasks = 10000

// Edge is a dependency on the task From: the task starts only after From
// has finished. Cost is the communication cost c(From, task) of eq. 2 and
// 5, in milliseconds (0 or more, finite). A Timeout above 0 marks the
// paper's timeout edge: From and the task must belong to one state group,
// and the task and the group's tasks after it form a new phase-1 group
// (see Graph).
type Edge struct {
	From    string
	Cost    float64
	Timeout time.Duration
}

// Task is one task of a work-flow: ID is unique and not empty, Cost is the
// computation cost w_i in milliseconds (0 or more, finite), StateGroup
// names the session the task belongs to ("" for a stateless task), After
// lists the tasks it depends on (each at most once).
type Task struct {
	ID         string
	Cost       float64
	StateGroup string
	After      []Edge
}

// GraphError says why a work-flow is refused, naming the task.
type GraphError struct {
	Task, Reason string
}

func (e *GraphError) Error() string { return fmt.Sprintf("task %q: %s", e.Task, e.Reason) }

// edge is an edge of the graph by task index.
type edge struct {
	task    int // the other end: the predecessor in preds, the successor in succs
	cost    float64
	timeout time.Duration
}

// Graph is a validated work-flow: a DAG of at most MaxTasks tasks. Tasks
// are numbered by their index in NewGraph's input. Immutable; safe for
// concurrent use.
//
// Phase-1 groups: the stateful tasks of one state group form one phase-1
// group, split at timeout edges: for a timeout edge u→v (u and v in the
// state group), v and every task of the group reachable from v form a new
// group. Precisely, two tasks of a state group are in one phase-1 group
// when the same timeout-edge heads of their group are among their
// ancestors (a task counting as its own ancestor). With no timeout edge a
// state group is one phase-1 group.
type Graph struct {
	ids   []string
	index map[string]int
	cost  []float64
	state []string // state group, "" when stateless
	preds [][]edge
	succs [][]edge
	topo  []int // a topological order
	ranks []float64
	order []int // the scheduling order: decreasing rank, ties in topological order
	// phase-1 groups
	seg      []int   // phase-1 group of each task, -1 when stateless
	segTasks [][]int // tasks of each phase-1 group, in scheduling order
}

// NewGraph validates tasks and builds their graph. It returns a
// *GraphError naming the task for an empty, duplicate or unknown id, a
// repeated edge, a negative or non-finite cost or timeout, a timeout edge
// outside one state group, a cycle (naming a task on it), or more than
// MaxTasks tasks (naming the first task over).
func NewGraph(tasks []Task) (*Graph, error) {
	if len(tasks) == 0 {
		return nil, &GraphError{Reason: "a work-flow needs at least one task"}
	}
	if len(tasks) > MaxTasks {
		return nil, &GraphError{Task: tasks[MaxTasks].ID, Reason: fmt.Sprintf("%d tasks, at most %d allowed", len(tasks), MaxTasks)}
	}
	n := len(tasks)
	g := &Graph{
		ids: make([]string, n), index: make(map[string]int, n), cost: make([]float64, n),
		state: make([]string, n), preds: make([][]edge, n), succs: make([][]edge, n),
	}
	for i, t := range tasks {
		if t.ID == "" {
			return nil, &GraphError{Task: t.ID, Reason: fmt.Sprintf("task %d has an empty id", i)}
		}
		if _, dup := g.index[t.ID]; dup {
			return nil, &GraphError{Task: t.ID, Reason: "duplicate id"}
		}
		if !validCost(t.Cost) {
			return nil, &GraphError{Task: t.ID, Reason: fmt.Sprintf("cost %v, must be finite and 0 or more", t.Cost)}
		}
		g.index[t.ID] = i
		g.ids[i], g.cost[i], g.state[i] = t.ID, t.Cost, t.StateGroup
	}
	for i, t := range tasks {
		seen := make(map[int]bool, len(t.After))
		for _, e := range t.After {
			p, ok := g.index[e.From]
			switch {
			case !ok:
				return nil, &GraphError{Task: t.ID, Reason: fmt.Sprintf("after unknown task %q", e.From)}
			case p == i:
				return nil, &GraphError{Task: t.ID, Reason: "depends on itself (a cycle)"}
			case seen[p]:
				return nil, &GraphError{Task: t.ID, Reason: fmt.Sprintf("after task %q twice", e.From)}
			case !validCost(e.Cost):
				return nil, &GraphError{Task: t.ID, Reason: fmt.Sprintf("edge from %q: cost %v, must be finite and 0 or more", e.From, e.Cost)}
			case e.Timeout < 0:
				return nil, &GraphError{Task: t.ID, Reason: fmt.Sprintf("edge from %q: timeout %v, must be 0 or more", e.From, e.Timeout)}
			case e.Timeout > 0 && (t.StateGroup == "" || tasks[p].StateGroup != t.StateGroup):
				return nil, &GraphError{Task: t.ID, Reason: fmt.Sprintf("edge from %q: a timeout edge must join two tasks of one state group", e.From)}
			}
			seen[p] = true
			g.preds[i] = append(g.preds[i], edge{task: p, cost: e.Cost, timeout: e.Timeout})
			g.succs[p] = append(g.succs[p], edge{task: i, cost: e.Cost, timeout: e.Timeout})
		}
	}
	if err := g.sortTopo(); err != nil {
		return nil, err
	}
	g.rank()
	g.groupStateful()
	return g, nil
}

func validCost(c float64) bool { return c >= 0 && !math.IsInf(c, 0) && !math.IsNaN(c) }

// sortTopo fills g.topo (Kahn's algorithm, lowest index first among the
// ready), or names a task on a cycle.
func (g *Graph) sortTopo() error {
	n := len(g.ids)
	indeg := make([]int, n)
	for i := range n {
		indeg[i] = len(g.preds[i])
	}
	queue := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for head := 0; head < len(queue); head++ {
		for _, e := range g.succs[queue[head]] {
			if indeg[e.task]--; indeg[e.task] == 0 {
				queue = append(queue, e.task)
			}
		}
	}
	if len(queue) == n {
		g.topo = queue
		return nil
	}
	// Every task left has a predecessor left: walking back along such
	// predecessors must repeat a task, and the first repeated is on a cycle.
	cur := -1
	for i := range n {
		if indeg[i] > 0 {
			cur = i
			break
		}
	}
	visited := make(map[int]bool)
	for !visited[cur] {
		visited[cur] = true
		for _, e := range g.preds[cur] {
			if indeg[e.task] > 0 {
				cur = e.task
				break
			}
		}
	}
	return &GraphError{Task: g.ids[cur], Reason: "on a cycle"}
}

// Len is the number of tasks.
func (g *Graph) Len() int { return len(g.ids) }

// ID is the id of task i.
func (g *Graph) ID(i int) string { return g.ids[i] }

// Index is the index of the task with the id, and whether there is one.
func (g *Graph) Index(id string) (int, bool) {
	i, ok := g.index[id]
	return i, ok
}

// Cost is task i's computation cost w_i (ms).
func (g *Graph) Cost(i int) float64 { return g.cost[i] }

// StateGroup is task i's state group, "" when it is stateless.
func (g *Graph) StateGroup(i int) string { return g.state[i] }

// Preds calls f for each predecessor p of task i with c(p,i) and the edge's
// timeout, in input order.
func (g *Graph) Preds(i int, f func(p int, cost float64, timeout time.Duration)) {
	for _, e := range g.preds[i] {
		f(e.task, e.cost, e.timeout)
	}
}

// Succs calls f for each successor s of task i with c(i,s), in input
// order.
func (g *Graph) Succs(i int, f func(s int, cost float64)) {
	for _, e := range g.succs[i] {
		f(e.task, e.cost)
	}
}
