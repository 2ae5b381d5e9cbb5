package workflow

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// task is one task's run-time state. Guarded by its run's mu.
type task struct {
	state  string // protocol.Task*; pending and queued are told apart by status
	server int    // the server it runs or ran on; -1 until started or gated
	start  time.Time
	finish time.Time
	status int
	err    string
}

// run is one work-flow.
type run struct {
	e       *Executor
	id      string
	target  Target
	plan    *plan
	created time.Time
	client  *http.Client
	// cancel ends the run's context (Cancel, Close); set before the loop
	// starts. done is closed when the loop has returned.
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	sched    scheduler
	tasks    []task
	state    string
	finished time.Time
	// last is the latest time given to sched, which is never given an
	// earlier one.
	last time.Time
}

func newRun(e *Executor, id string, t Target, p *plan, s scheduler, now time.Time) *run {
	r := &run{
		e: e, id: id, target: t, plan: p, created: now, sched: s, last: now,
		client: &http.Client{Transport: t.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		done:   make(chan struct{}),
		tasks:  make([]task, len(p.tasks)),
		state:  protocol.WorkflowRunning,
	}
	for i := range r.tasks {
		r.tasks[i] = task{state: protocol.TaskPending, server: -1}
	}
	return r
}

// result is a finished call.
type result struct {
	task, server int
	finish       time.Time
	status       int
	err          error
}

// gate holds the run's per-server slots. The scheduler keeps k per server
// itself; the gate keeps it too when a task is placed again on another
// server (its own died), so that no replica ever runs more than k of the
// work-flow's tasks. Owned by the loop's goroutine.
type gate struct {
	running []int
	waiting [][]int
	calls   int // calls in flight
}

// loop runs the work-flow to its end: dispatches what the scheduler says,
// starts the calls, feeds their ends back, until every task is done,
// failed or skipped, or ctx ends (cancelled: calls in flight are
// abandoned and waited for).
func (r *run) loop(ctx context.Context) {
	defer close(r.done)
	n := len(r.target.Replicas)
	g := &gate{running: make([]int, n), waiting: make([][]int, n)}
	results := make(chan result)
	cancelled := false
	for {
		r.mu.Lock()
		if !cancelled {
			now := r.nowLocked()
			for _, d := range r.sched.Dispatch(now) {
				r.placeLocked(ctx, g, d.Task, d.Server, now, results)
			}
		}
		end := g.calls == 0 && (cancelled || r.sched.Finished() || r.stalledLocked(g))
		if end {
			r.finishLocked(cancelled)
		}
		r.mu.Unlock()
		if end {
			if c, ok := r.target.Transport.(interface{ CloseIdleConnections() }); ok {
				c.CloseIdleConnections()
			}
			return
		}
		select {
		case res := <-results:
			r.mu.Lock()
			r.endLocked(ctx, g, res, results)
			r.mu.Unlock()
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				continue
			}
			res := <-results // the calls end: their contexts are done
			r.mu.Lock()
			r.endLocked(ctx, g, res, results)
			r.mu.Unlock()
		}
	}
}

// nowLocked is the clock's time, never earlier than a time sched was
// given. Caller holds r.mu.
func (r *run) nowLocked() time.Time {
	now := r.e.clock.Now()
	if now.Before(r.last) {
		now = r.last
	}
	r.last = now
	return now
}

// stalledLocked reports whether nothing runs, nothing waits and the
// scheduler has nothing to dispatch although tasks remain: a scheduler
// bug, ended as a failure rather than a hang. Caller holds r.mu.
func (r *run) stalledLocked(g *gate) bool {
	for _, w := range g.waiting {
		if len(w) > 0 {
			return false
		}
	}
	if !r.sched.Finished() {
		r.e.log.Error("work-flow scheduler dispatched nothing with tasks left; failing them", "group", r.target.Group, "workflow", r.id)
		return true
	}
	return false
}

// placeLocked starts task on server, or another live server when that
// one is gone and the task is stateless, or fails it when it is
// stateful; it waits in the gate when the server has k tasks running.
// Caller holds r.mu.
func (r *run) placeLocked(ctx context.Context, g *gate, t, s int, now time.Time, results chan<- result) {
	if !r.alive(s) {
		if sg := r.plan.tasks[t].StateGroup; sg != "" {
			r.tasks[t].server = s // shown as where it was to run
			r.failLocked(t, now, 0, fmt.Sprintf("replica %s is gone: the session of state group %q on it is lost", r.target.Replicas[s].ID, sg))
			return
		}
		s = r.replaceLocked(g)
		if s < 0 {
			r.failLocked(t, now, 0, "no replica of the work-flow is active any more")
			return
		}
	}
	r.tasks[t].server = s
	if g.running[s] >= r.target.Parallel {
		r.tasks[t].state = protocol.TaskQueued
		g.waiting[s] = append(g.waiting[s], t)
		return
	}
	r.startLocked(ctx, g, t, s, now, results)
}

// replaceLocked picks the live server with the fewest of the work-flow's
// tasks running and waiting (the first of those tied), or -1. Caller
// holds r.mu.
func (r *run) replaceLocked(g *gate) int {
	best, load := -1, 0
	for s := range r.target.Replicas {
		if !r.alive(s) {
			continue
		}
		if l := g.running[s] + len(g.waiting[s]); best < 0 || l < load {
			best, load = s, l
		}
	}
	return best
}

func (r *run) alive(s int) bool {
	return r.target.Alive == nil || r.target.Alive(r.target.Replicas[s].ID)
}

// startLocked sends task t's call to server s. Caller holds r.mu.
func (r *run) startLocked(ctx context.Context, g *gate, t, s int, now time.Time, results chan<- result) {
	g.running[s]++
	g.calls++
	r.tasks[t].state = protocol.TaskRunning
	r.tasks[t].start = now
	go func() {
		status, err := r.do(ctx, t, s)
		results <- result{task: t, server: s, finish: r.e.clock.Now(), status: status, err: err}
	}()
}

// endLocked records a finished call, tells the scheduler and starts the
// next task waiting for the server. Caller holds r.mu.
func (r *run) endLocked(ctx context.Context, g *gate, res result, results chan<- result) {
	g.running[res.server]--
	g.calls--
	at := res.finish
	if at.Before(r.last) {
		at = r.last
	}
	r.last = at
	t := &r.tasks[res.task]
	t.finish, t.status = res.finish, res.status
	switch {
	case ctx.Err() != nil && res.err != nil:
		r.failLocked(res.task, at, res.status, "cancelled")
	case res.err != nil:
		r.failLocked(res.task, at, res.status, res.err.Error())
	case res.status >= 400:
		r.failLocked(res.task, at, res.status, fmt.Sprintf("the replica answered %d %s", res.status, http.StatusText(res.status)))
	default:
		t.state = protocol.TaskDone
		r.sched.Done(res.task, at)
	}
	if w := g.waiting[res.server]; len(w) > 0 && ctx.Err() == nil {
		next := w[0]
		g.waiting[res.server] = w[1:]
		r.startLocked(ctx, g, next, res.server, at, results)
	}
}

// failLocked marks task t failed, tells the scheduler and skips every task
// that depends on it. Caller holds r.mu.
func (r *run) failLocked(t int, at time.Time, status int, why string) {
	task := &r.tasks[t]
	task.state, task.status, task.err = protocol.TaskFailed, status, why
	if task.finish.IsZero() {
		task.finish = at
	}
	r.sched.Failed(t, at)
	r.skipLocked(t, fmt.Sprintf("task %q failed", r.plan.tasks[t].ID))
}

// skipLocked marks the tasks depending on t skipped. Caller holds r.mu.
func (r *run) skipLocked(t int, why string) {
	for _, s := range r.plan.succs[t] {
		if st := r.tasks[s].state; st == protocol.TaskPending || st == protocol.TaskQueued {
			r.tasks[s].state, r.tasks[s].err = protocol.TaskSkipped, why
			r.skipLocked(s, why)
		}
	}
}

// finishLocked ends the run: tasks never started are skipped (cancelled)
// or failed (a stalled scheduler), and the work-flow's state is set.
// Caller holds r.mu.
func (r *run) finishLocked(cancelled bool) {
	r.finished = r.e.clock.Now()
	if r.finished.Before(r.last) {
		r.finished = r.last
	}
	failed := false
	for i := range r.tasks {
		t := &r.tasks[i]
		switch t.state {
		case protocol.TaskPending, protocol.TaskQueued:
			if cancelled {
				t.state, t.err = protocol.TaskSkipped, "cancelled"
			} else {
				t.state, t.err = protocol.TaskFailed, "the scheduler never dispatched it"
				failed = true
			}
		case protocol.TaskFailed, protocol.TaskSkipped:
			failed = true
		}
	}
	switch {
	case cancelled:
		r.state = protocol.WorkflowCancelled
	case failed:
		r.state = protocol.WorkflowFailed
	default:
		r.state = protocol.WorkflowDone
	}
}

// finishedAt is when the run finished, ok false while it runs.
func (r *run) finishedAt() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finished, r.state != protocol.WorkflowRunning
}
