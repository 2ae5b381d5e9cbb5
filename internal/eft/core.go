package eft

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Status is where a task of a Core stands.
type Status int

// The statuses of a task.
const (
	Pending Status = iota // not started
	Running               // dispatched, not yet done or failed
	Done                  // finished (Core.Done)
	Failed                // failed (Core.Failed)
	Skipped               // not run: a task it depends on failed or was skipped
)

func (s Status) String() string {
	switch s {
	case Pending:
		return "pending"
	case Running:
		return "running"
	case Done:
		return "done"
	case Failed:
		return "failed"
	case Skipped:
		return "skipped"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Dispatch is a task to start now on a server (indexes: Graph's tasks,
// servers 0..servers-1).
type Dispatch struct {
	Task, Server int
}

// Core is the online form of Algorithm 2 that an executor drives: NewCore
// plans (phase 1, then phase 2 in decreasing rank with the minimum EFT),
// Dispatch hands out the tasks whose predecessors are done, on their
// servers, at most k running per server, and Done and Failed report what
// happened, with the actual times (AFT). Times are relative to the start
// given to NewCore; Core never reads a clock.
//
// Queueing: a ready task whose server already runs k tasks waits; waiting
// tasks are dispatched in the scheduling order (decreasing rank) as
// servers free up.
//
// The run-time rule: when the first task of a phase-1 group that has a
// timeout edge in (from u) is dispatched, and less than the edge's timeout
// has passed since u finished, the session has not expired: the group
// goes to u's server, and phase 1 runs again for the phase-1 groups no
// task of which has started yet, against the remaining load of the groups
// that have (R_k: a pending task's cost, a running task's cost less the
// time it has run). Otherwise the group keeps its server from phase 1 (a
// new session).
//
// Stateless tasks: NewCore's plan (phase 2 with the predecessors' planned
// finish times) is their placement until they are ready; when one is
// dispatched, eq. 5 is evaluated again with the actual finish times (AFT)
// of its predecessors and the tasks then running on each server, and it
// goes to the server with the minimum EFT (the planned one on a tie). It
// waits, in rank order, while that server runs k tasks.
//
// Not safe for concurrent use.
type Core struct {
	g       *Graph
	k       int
	server  []int // planned, then actual
	status  []Status
	started []float64 // ms since start
	aft     []float64 // ms since start
	waiting []int     // predecessors not yet done
	pos     []int     // position in g.order
	ready   []int     // positions in g.order of pending tasks whose predecessors are done, ascending
	running []int     // tasks running per server
	start   time.Time
	lastNow float64 // ms of the last Dispatch
	left    int     // tasks not done, failed or skipped

	onServer    [][]int // running tasks per server
	groupServer []int
	groupPinned []bool // a task of the group has been dispatched: its session lives on groupServer
	estFinish   []float64
}

// NewCore plans g on servers servers running at most k tasks each, the
// work-flow starting at start. It panics when servers or k is below 1 (a
// caller's broken precondition: validate configuration first).
func NewCore(g *Graph, servers, k int, start time.Time) *Core {
	if servers < 1 || k < 1 {
		panic(fmt.Sprintf("eft: NewCore with %d servers and k=%d, both must be 1 or more", servers, k))
	}
	n := g.Len()
	c := &Core{
		g: g, k: k, start: start, left: n,
		server: make([]int, n), status: make([]Status, n), started: make([]float64, n), aft: make([]float64, n),
		waiting: make([]int, n), pos: make([]int, n), running: make([]int, servers), onServer: make([][]int, servers),
		groupServer: make([]int, len(g.segTasks)), groupPinned: make([]bool, len(g.segTasks)),
	}
	for p, i := range g.order {
		c.pos[i] = p
		c.waiting[i] = len(g.preds[i])
		if c.waiting[i] == 0 {
			c.ready = append(c.ready, p)
		}
	}
	all := make([]int, len(g.segTasks))
	for s := range all {
		all[s] = s
	}
	c.place(all, make([]float64, servers))
	c.estFinish = c.plan(servers)
	return c
}

// place runs phase 1 for groups and sets their tasks' servers.
func (c *Core) place(groups []int, load []float64) {
	servers := phase1(groups, c.remainingOf, load)
	for gi, grp := range groups {
		c.groupServer[grp] = servers[gi]
		for _, i := range c.g.segTasks[grp] {
			c.server[i] = servers[gi]
		}
	}
}

// remainingOf is Σ R_k of a phase-1 group's tasks (eq. 3–4).
func (c *Core) remainingOf(grp int) float64 {
	r := 0.0
	for _, i := range c.g.segTasks[grp] {
		r += c.remaining(i)
	}
	return r
}

// remaining is R_k: what is left of task i's computation, as far as the
// core knows (a running task counted as running at full speed).
func (c *Core) remaining(i int) float64 {
	switch c.status[i] {
	case Pending:
		return c.g.cost[i]
	case Running:
		return max(0, c.g.cost[i]-c.lastNow+c.started[i])
	}
	return 0
}

// plan is phase 2: each task in decreasing rank, a stateful one on its
// group's server, a stateless one on the server with the minimum EFT
// (eq. 5) — ties to the lowest index — with the predecessors' planned
// finish times standing for their AFT. It returns the planned finish
// times.
func (c *Core) plan(servers int) []float64 {
	g := c.g
	profiles := make([]profile, servers)
	finish := make([]float64, g.Len())
	for _, i := range g.order {
		readyOn := func(s int) float64 {
			r := 0.0
			for _, e := range g.preds[i] {
				at := finish[e.task]
				if c.server[e.task] != s {
					at += e.cost
				}
				r = max(r, at)
			}
			return r
		}
		best, bestStart, bestFinish := c.server[i], 0.0, 0.0
		if g.seg[i] >= 0 {
			bestStart, bestFinish = profiles[best].exec(g.cost[i], readyOn(best), c.k)
		} else {
			for s := range servers {
				st, f := profiles[s].exec(g.cost[i], readyOn(s), c.k)
				if s == 0 || f < bestFinish {
					best, bestStart, bestFinish = s, st, f
				}
			}
		}
		c.server[i] = best
		finish[i] = bestFinish
		profiles[best] = append(profiles[best], interval{bestStart, bestFinish})
	}
	return finish
}

// ms is now in milliseconds since the start.
func (c *Core) ms(now time.Time) float64 {
	return float64(now.Sub(c.start)) / float64(time.Millisecond)
}

// Dispatch returns the tasks to start now, each on its server: pending
// tasks whose predecessors are all done, in decreasing rank, as long as
// their server (for a stateless task, the one with the minimum EFT now)
// runs fewer than k tasks. The tasks returned are Running
// until Done or Failed. It applies the run-time rule of timeout edges (see
// Core).
func (c *Core) Dispatch(now time.Time) []Dispatch {
	t := c.ms(now)
	c.lastNow = t
	var out []Dispatch
	free := 0
	for _, r := range c.running {
		free += max(0, c.k-r)
	}
	keep := c.ready[:0]
	for n, p := range c.ready {
		if free == 0 { // every server runs k tasks: the rest waits
			keep = append(keep, c.ready[n:]...)
			break
		}
		i := c.g.order[p]
		s, alive := c.server[i], false
		grp := c.g.seg[i]
		switch {
		case grp < 0:
			s = c.minEFT(i, t)
		case !c.groupPinned[grp]:
			s, alive = c.sessionServer(i, t)
		}
		if c.running[s] >= c.k {
			keep = append(keep, p)
			continue
		}
		if grp >= 0 && !c.groupPinned[grp] {
			c.pin(grp, s, alive)
		}
		c.server[i] = s
		c.status[i] = Running
		c.started[i] = t
		c.running[s]++
		free--
		c.onServer[s] = append(c.onServer[s], i)
		out = append(out, Dispatch{Task: i, Server: s})
	}
	c.ready = keep
	return out
}

// minEFT is phase 2 for a ready stateless task at t: the server with the
// minimum EFT (eq. 5), now with the predecessors' actual finish times
// (AFT) and avail[s] the tasks running on s (each with what is left of its
// cost, stretched by the tasks it shares s with, as its interval); ties go
// to the planned server, then to the lowest index.
func (c *Core) minEFT(i int, t float64) int {
	best, bestFinish := c.server[i], math.Inf(1)
	for s := range c.running {
		ready := t
		for _, e := range c.g.preds[i] {
			at := c.aft[e.task]
			if c.server[e.task] != s {
				at += e.cost
			}
			ready = max(ready, at)
		}
		prof := make(profile, 0, len(c.onServer[s]))
		n := float64(len(c.onServer[s]))
		for _, j := range c.onServer[s] {
			left := max(0, c.g.cost[j]-(t-c.started[j])/n)
			prof = append(prof, interval{t, t + left*n})
		}
		_, f := prof.exec(c.g.cost[i], ready, c.k)
		if f < bestFinish || (f == bestFinish && s == c.server[i]) {
			best, bestFinish = s, f
		}
	}
	return best
}

// stop takes running task i off its server.
func (c *Core) stop(i int) {
	s := c.server[i]
	c.running[s]--
	on := c.onServer[s]
	if at := slices.Index(on, i); at >= 0 {
		on[at] = on[len(on)-1]
		c.onServer[s] = on[:len(on)-1]
	}
}

// sessionServer is where the first task i of an unpinned phase-1 group
// goes at t: the server of the predecessor of one of its timeout edges
// when less than that edge's timeout has passed since the predecessor
// finished (alive), else the group's phase-1 server.
func (c *Core) sessionServer(i int, t float64) (server int, alive bool) {
	for _, e := range c.g.preds[i] {
		if e.timeout > 0 && t-c.aft[e.task] < float64(e.timeout)/float64(time.Millisecond) {
			return c.server[e.task], true
		}
	}
	return c.groupServer[c.g.seg[i]], false
}

// pin fixes a phase-1 group on server s as its first task is dispatched;
// when the session of a timeout edge was alive, phase 1 runs again for the
// groups not yet started.
func (c *Core) pin(grp, s int, alive bool) {
	c.groupPinned[grp] = true
	c.groupServer[grp] = s
	for _, i := range c.g.segTasks[grp] {
		c.server[i] = s
	}
	if !alive {
		return
	}
	load := make([]float64, len(c.running))
	var open []int
	for other := range c.g.segTasks {
		switch {
		case c.groupPinned[other]:
			load[c.groupServer[other]] += c.remainingOf(other)
		default:
			open = append(open, other)
		}
	}
	c.place(open, load)
}

// Done reports that task i finished at now (its AFT). Its successors whose
// predecessors are now all done become ready. A task that is not Running
// is left as it is.
func (c *Core) Done(i int, now time.Time) {
	if i < 0 || i >= len(c.status) || c.status[i] != Running {
		return
	}
	c.status[i] = Done
	c.aft[i] = c.ms(now)
	c.stop(i)
	c.left--
	for _, e := range c.g.succs[i] {
		if c.waiting[e.task]--; c.waiting[e.task] == 0 && c.status[e.task] == Pending {
			p := c.pos[e.task]
			at, _ := slices.BinarySearch(c.ready, p)
			c.ready = slices.Insert(c.ready, at, p)
		}
	}
}

// Failed reports that task i failed at now: every task that depends on it,
// directly or not, is Skipped. A task that is not Running is left as it
// is.
func (c *Core) Failed(i int, now time.Time) {
	if i < 0 || i >= len(c.status) || c.status[i] != Running {
		return
	}
	c.status[i] = Failed
	c.aft[i] = c.ms(now)
	c.stop(i)
	c.left--
	stack := []int{i}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range c.g.succs[j] {
			if c.status[e.task] == Pending {
				c.status[e.task] = Skipped
				c.left--
				stack = append(stack, e.task)
			}
		}
	}
}

// Placement is task i's server: planned until it is dispatched, then
// actual. ok is false when i is not a task.
func (c *Core) Placement(i int) (server int, ok bool) {
	if i < 0 || i >= len(c.server) {
		return 0, false
	}
	return c.server[i], true
}

// Status is task i's status (Pending when i is not a task).
func (c *Core) Status(i int) Status {
	if i < 0 || i >= len(c.status) {
		return Pending
	}
	return c.status[i]
}

// Planned is task i's finish time as phase 2 estimated it (ms after the
// start); 0 when i is not a task.
func (c *Core) Planned(i int) float64 {
	if i < 0 || i >= len(c.estFinish) {
		return 0
	}
	return c.estFinish[i]
}

// Finished says whether every task is done, failed or skipped.
func (c *Core) Finished() bool { return c.left == 0 }
