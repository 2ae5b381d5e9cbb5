// Package eft is the EFT work-flow scheduler of Chen et al. (§IV.B,
// Algorithm 2): a work-flow is a DAG of tasks with computation costs w_i,
// edges with communication costs c(i,j) and, optionally, timeout edges;
// some tasks are stateful (they belong to a state group and must run
// where their group's session lives). The scheduler ranks the tasks
// (upward rank, eq. 2), places the stateful groups first by group load
// (phase 1, eq. 3–4; a timeout edge starts a new stateful group, defined
// precisely on Graph), then places each task, in decreasing rank, on the
// server with the minimum earliest finish time (eq. 5), where a server
// runs at most k tasks at once and a task sharing a server with n running
// tasks progresses at 1/n of its speed (Exec(w, avail, k)); at dispatch, a
// stateless task's EFT is evaluated again with its predecessors' actual
// finish times. At run time, when the successor of a timeout edge is about
// to start before the edge's timeout has passed since its predecessor
// finished, the session has not expired: the rest of that group is sent to
// the predecessor's server and phase 1 is run again for the stateful
// groups not yet started (see Core).
//
// The package is pure: no I/O, no clock (callers pass the time), no
// goroutines. The admin API's work-flow executor (internal/workflow)
// drives a Core with real calls; fulcrum bench eft drives it with the
// simulated servers of Simulate.
//
// The exported surface (the executor depends on it):
//
//	const MaxTasks = 10000
//	type Edge struct { From string; Cost float64; Timeout time.Duration }
//	type Task struct { ID string; Cost float64; StateGroup string; After []Edge }
//	type GraphError struct { Task, Reason string }           // Error(): "task \"x\": reason"
//	func NewGraph(tasks []Task) (*Graph, error)              // *GraphError: empty, duplicate or unknown ids, repeated edges, cycles, too many tasks, bad costs or timeouts
//	func (g *Graph) Len() int
//	func (g *Graph) ID(i int) string; Index(id string) (int, bool)
//	func (g *Graph) Cost(i int) float64; StateGroup(i int) string
//	func (g *Graph) Preds(i int, f func(p int, cost float64, timeout time.Duration)); Succs(i int, f func(s int, cost float64))
//	func (g *Graph) Ranks() []float64                        // eq. 2, by task index (input order)
//	func (g *Graph) Order() []int                            // scheduling order: decreasing rank
//	func (g *Graph) Groups() [][]int; Group(i int) int       // phase-1 groups (state groups split at timeout edges)
//	type Dispatch struct { Task, Server int }
//	type Status int                                          // Pending, Running, Done, Failed, Skipped
//	func NewCore(g *Graph, servers, k int, start time.Time) *Core
//	func (c *Core) Dispatch(now time.Time) []Dispatch        // tasks to start now, on which server
//	func (c *Core) Done(task int, now time.Time)             // a task finished (AFT = now)
//	func (c *Core) Failed(task int, now time.Time)           // a task failed: its successors are skipped
//	func (c *Core) Placement(task int) (server int, ok bool) // planned or actual server
//	func (c *Core) Status(task int) Status
//	func (c *Core) Planned(task int) float64                 // phase 2's estimated finish (ms after start)
//	func (c *Core) Finished() bool                           // every task done, failed or skipped
//
//	type Policy string                                       // PolicyEFT, PolicyETT, PolicyRoundRobin; var Policies
//	func Simulate(g *Graph, servers, k int, p Policy) (float64, error) // makespan (ms) on simulated servers
//
// Usage (an executor; Simulate does the same with simulated servers):
//
//	g, err := eft.NewGraph(tasks) // err is a *GraphError naming the task
//	c := eft.NewCore(g, replicas, k, start)
//	for !c.Finished() {
//		for _, d := range c.Dispatch(now) {
//			// start task d.Task on replica d.Server; when it ends:
//			// c.Done(d.Task, end) or c.Failed(d.Task, end)
//		}
//		// wait for a task to end
//	}
//
// Costs are in milliseconds (the API's cost_ms); Simulate returns
// makespans in the same unit.
package eft
