package workflow

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/eft"
)

// roundRobin is the baseline EFT is compared with (placement
// round-robin): tasks are placed when they become ready (their
// predecessors all done), in the request's order among those that become
// ready together, on the servers in turn; a state group's later tasks go
// where its first went (timeout edges do not move it). Each server runs
// at most k tasks at once; further tasks wait in the order they were
// placed. Pure and not safe for concurrent use, like eft.Core.
type roundRobin struct {
	succs    [][]int
	groups   []string
	servers  int
	k        int
	next     int
	byGroup  map[string]int
	server   []int // -1 until placed
	left     []int // predecessors not done
	finished []bool
	running  []int   // per server
	queue    [][]int // per server, placed and not yet dispatched
	ready    []int   // became ready, not yet placed
	open     int     // tasks not done, failed or skipped
}

// newRoundRobin schedules p's tasks on servers servers, k at once each.
func newRoundRobin(p *plan, servers, k int) *roundRobin {
	n := len(p.tasks)
	r := &roundRobin{
		succs:    p.succs,
		groups:   make([]string, n),
		servers:  servers,
		k:        k,
		byGroup:  map[string]int{},
		server:   make([]int, n),
		left:     make([]int, n),
		finished: make([]bool, n),
		running:  make([]int, servers),
		queue:    make([][]int, servers),
		open:     n,
	}
	for i, t := range p.tasks {
		r.groups[i] = t.StateGroup
		r.server[i] = -1
		r.left[i] = len(p.preds[i])
		if r.left[i] == 0 {
			r.ready = append(r.ready, i)
		}
	}
	return r
}

func (r *roundRobin) Dispatch(time.Time) []eft.Dispatch {
	for _, t := range r.ready {
		s, ok := r.byGroup[r.groups[t]]
		if !ok || r.groups[t] == "" {
			s = r.next % r.servers
			r.next++
			if r.groups[t] != "" {
				r.byGroup[r.groups[t]] = s
			}
		}
		r.server[t] = s
		r.queue[s] = append(r.queue[s], t)
	}
	r.ready = r.ready[:0]
	var out []eft.Dispatch
	for s := range r.queue {
		for r.running[s] < r.k && len(r.queue[s]) > 0 {
			t := r.queue[s][0]
			r.queue[s] = r.queue[s][1:]
			r.running[s]++
			out = append(out, eft.Dispatch{Task: t, Server: s})
		}
	}
	return out
}

func (r *roundRobin) Done(task int, _ time.Time) {
	r.end(task)
	for _, s := range r.succs[task] {
		if r.left[s]--; r.left[s] == 0 && !r.finished[s] {
			r.ready = append(r.ready, s)
		}
	}
}

func (r *roundRobin) Failed(task int, _ time.Time) {
	r.end(task)
	r.skip(task)
}

// end counts a dispatched task out.
func (r *roundRobin) end(task int) {
	if r.finished[task] || r.server[task] < 0 {
		return
	}
	r.running[r.server[task]]--
	r.finished[task] = true
	r.open--
}

// skip marks every task that depends on task finished (skipped).
func (r *roundRobin) skip(task int) {
	for _, s := range r.succs[task] {
		if !r.finished[s] {
			r.finished[s] = true
			r.open--
			r.skip(s)
		}
	}
}

func (r *roundRobin) Placement(task int) (int, bool) {
	if task < 0 || task >= len(r.server) || r.server[task] < 0 {
		return 0, false
	}
	return r.server[task], true
}

func (r *roundRobin) Finished() bool { return r.open == 0 }
