package eft

import (
	"fmt"
	"math"
	"time"
)

// Policy is how Simulate places tasks.
type Policy string

// The policies Simulate compares (Chen et al. §V, Fig. 17/18).
const (
	// PolicyEFT is Algorithm 2, driven through a Core.
	PolicyEFT Policy = "eft"
	// PolicyETT places each task as it becomes ready on the server
	// minimising its estimated task time, eq. 1: cc(n_i)/(P_j(1 − CPU
	// load)) + d(n_i)/(W_j(1 − bandwidth load)). With identical servers
	// and a server's CPU and bandwidth load both n_s/(n_s+1) (n_s the
	// tasks placed on s and not yet finished: each receives its data,
	// then computes), ETT(n_i, s) = (w_i + d_i) × (1 + n_s), d_i being
	// the task's data Σ c(p,i) over all its predecessors. Eq. 1 does not
	// know where the predecessors ran: ETT is blind to locality, which is
	// what the work-flow graph gives EFT.
	PolicyETT Policy = "ett"
	// PolicyRoundRobin places each task as it becomes ready on the next
	// server in turn.
	PolicyRoundRobin Policy = "round-robin"
)

// Policies are the policies Simulate knows, in the figures' order.
var Policies = []Policy{PolicyEFT, PolicyETT, PolicyRoundRobin}

// Simulate runs g on servers identical simulated servers that each run at
// most k tasks at once, placing tasks by p, and returns the makespan in ms
// (the last task's finish). The model, the same for every policy:
//
//   - a task placed on a server queues there (in the order tasks were
//     placed; EFT's Core holds its own queue in rank order and hands a
//     server no more than k) until fewer than k tasks run on it;
//   - once started, it first receives its predecessors' data: c(p,i) from
//     each predecessor p on another server, nothing from one on the same
//     server (as in HEFT), so it can compute from max over p of AFT(p) +
//     c(p,i) on;
//   - n tasks computing on one server each progress at 1/n of their speed.
//
// Stateful tasks: ETT and round-robin keep a session table, as the switch
// does: a state group's first task is placed as the policy says, and the
// group's later tasks follow it; the successor of a timeout edge placed at
// least the edge's timeout after its predecessor finished finds the
// session expired and is placed afresh, starting a new session. EFT
// applies its own run-time rule (see Core).
func Simulate(g *Graph, servers, k int, p Policy) (float64, error) {
	if servers < 1 {
		return 0, fmt.Errorf("eft: simulate with %d servers, must be 1 or more", servers)
	}
	if k < 1 {
		return 0, fmt.Errorf("eft: simulate with k=%d, must be 1 or more", k)
	}
	var pol simPolicy
	switch p {
	case PolicyEFT:
		pol = &eftPolicy{core: NewCore(g, servers, k, simEpoch)}
	case PolicyETT, PolicyRoundRobin:
		pol = newOnlinePolicy(g, servers, p)
	default:
		return 0, fmt.Errorf("eft: unknown policy %q, want one of %v", p, Policies)
	}
	return newSim(g, servers, k).run(pol)
}

// simEpoch is the simulated work-flows' start.
var simEpoch = time.Unix(0, 0).UTC()

func simTime(ms float64) time.Time {
	return simEpoch.Add(time.Duration(math.Round(ms * float64(time.Millisecond))))
}

// simPolicy places tasks for the simulator.
type simPolicy interface {
	// place returns the tasks to hand to servers at t.
	place(t float64, s *sim) []Dispatch
	// done reports a task finished at t.
	done(task int, t float64)
}

type simTask struct {
	task   int
	dataAt float64 // its input has arrived
	left   float64 // computation left
}

type simServer struct {
	queue  []int
	active []simTask
}

// sim is the simulated servers and the tasks' state.
type sim struct {
	g       *Graph
	k       int
	servers []simServer
	server  []int // where each task was placed, -1 before
	aft     []float64
	done    int
}

func newSim(g *Graph, servers, k int) *sim {
	s := &sim{g: g, k: k, servers: make([]simServer, servers), server: make([]int, g.Len()), aft: make([]float64, g.Len())}
	for i := range s.server {
		s.server[i] = -1
	}
	return s
}

const simEpsilon = 1e-9

func (s *sim) run(pol simPolicy) (float64, error) {
	t := 0.0
	n := s.g.Len()
	for s.done < n {
		for _, d := range pol.place(t, s) {
			s.server[d.Task] = d.Server
			s.servers[d.Server].queue = append(s.servers[d.Server].queue, d.Task)
		}
		for si := range s.servers {
			s.startQueued(si, t)
		}
		next := math.Inf(1)
		for si := range s.servers {
			srv := &s.servers[si]
			computing := float64(s.computing(si, t))
			for _, a := range srv.active {
				if a.dataAt > t {
					next = min(next, a.dataAt)
				} else {
					next = min(next, t+a.left*computing)
				}
			}
		}
		if math.IsInf(next, 1) {
			return 0, fmt.Errorf("eft: simulation stalled at %.3fms with %d of %d tasks done", t, s.done, n)
		}
		for si := range s.servers {
			srv := &s.servers[si]
			if computing := float64(s.computing(si, t)); computing > 0 {
				for j := range srv.active {
					if srv.active[j].dataAt <= t {
						srv.active[j].left -= (next - t) / computing
					}
				}
			}
		}
		t = next
		for si := range s.servers {
			srv := &s.servers[si]
			keep := srv.active[:0]
			for _, a := range srv.active {
				if a.dataAt <= t && a.left <= simEpsilon*max(1, s.g.cost[a.task]) {
					s.aft[a.task] = t
					s.done++
					pol.done(a.task, t)
					continue
				}
				keep = append(keep, a)
			}
			srv.active = keep
		}
	}
	makespan := 0.0
	for _, f := range s.aft {
		makespan = max(makespan, f)
	}
	return makespan, nil
}

// computing counts the tasks of server si computing at t (their data
// arrived).
func (s *sim) computing(si int, t float64) int {
	n := 0
	for _, a := range s.servers[si].active {
		if a.dataAt <= t {
			n++
		}
	}
	return n
}

// startQueued starts queued tasks of server si while it runs fewer than k.
func (s *sim) startQueued(si int, t float64) {
	srv := &s.servers[si]
	for len(srv.queue) > 0 && len(srv.active) < s.k {
		i := srv.queue[0]
		srv.queue = srv.queue[1:]
		srv.active = append(srv.active, simTask{task: i, dataAt: s.dataAt(i, si, t), left: s.g.cost[i]})
	}
}

// dataAt is when task i, started at t on server si, has its predecessors'
// data.
func (s *sim) dataAt(i, si int, t float64) float64 {
	at := t
	for _, e := range s.g.preds[i] {
		arrive := s.aft[e.task]
		if s.server[e.task] != si {
			arrive += e.cost
		}
		at = max(at, arrive)
	}
	return at
}

// eftPolicy drives a Core.
type eftPolicy struct{ core *Core }

func (p *eftPolicy) place(t float64, _ *sim) []Dispatch { return p.core.Dispatch(simTime(t)) }
func (p *eftPolicy) done(task int, t float64)           { p.core.Done(task, simTime(t)) }

// onlinePolicy is ETT or round-robin: each task placed as it becomes
// ready, stateful tasks through a session table.
type onlinePolicy struct {
	g        *Graph
	ett      bool
	servers  int
	waiting  []int
	ready    []int // became ready, not yet placed, in the order they did
	load     []int // tasks placed and not finished, per server
	placedOn []int
	aft      []float64
	next     int            // round-robin's next server
	session  map[string]int // state group → server
}

func newOnlinePolicy(g *Graph, servers int, p Policy) *onlinePolicy {
	o := &onlinePolicy{
		g: g, ett: p == PolicyETT, servers: servers, waiting: make([]int, g.Len()), load: make([]int, servers),
		placedOn: make([]int, g.Len()), aft: make([]float64, g.Len()), session: map[string]int{},
	}
	for i := range g.Len() {
		o.waiting[i] = len(g.preds[i])
		if o.waiting[i] == 0 {
			o.ready = append(o.ready, i)
		}
	}
	return o
}

func (o *onlinePolicy) place(t float64, _ *sim) []Dispatch {
	out := make([]Dispatch, 0, len(o.ready))
	for _, i := range o.ready {
		s, ok := o.sessionServer(i, t)
		if !ok {
			s = o.choose(i)
			if grp := o.g.state[i]; grp != "" {
				o.session[grp] = s
			}
		}
		o.placedOn[i] = s
		o.load[s]++
		out = append(out, Dispatch{Task: i, Server: s})
	}
	o.ready = o.ready[:0]
	return out
}

// sessionServer is the server of task i's live session, if it has one.
func (o *onlinePolicy) sessionServer(i int, t float64) (int, bool) {
	grp := o.g.state[i]
	if grp == "" {
		return 0, false
	}
	s, ok := o.session[grp]
	if !ok {
		return 0, false
	}
	for _, e := range o.g.preds[i] {
		if e.timeout > 0 && t-o.aft[e.task] >= float64(e.timeout)/float64(time.Millisecond) {
			return 0, false // expired
		}
	}
	return s, true
}

// choose is the policy's server for a task with no live session.
func (o *onlinePolicy) choose(i int) int {
	if !o.ett {
		s := o.next % o.servers
		o.next++
		return s
	}
	d := 0.0
	for _, e := range o.g.preds[i] {
		d += e.cost
	}
	best, bestETT := 0, math.Inf(1)
	for s := range o.servers {
		ett := (o.g.cost[i] + d) * float64(1+o.load[s])
		if ett < bestETT {
			best, bestETT = s, ett
		}
	}
	return best
}

func (o *onlinePolicy) done(task int, t float64) {
	o.aft[task] = t
	o.load[o.placedOn[task]]--
	for _, e := range o.g.succs[task] {
		if o.waiting[e.task]--; o.waiting[e.task] == 0 {
			o.ready = append(o.ready, e.task)
		}
	}
}
