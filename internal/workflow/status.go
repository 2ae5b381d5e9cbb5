package workflow

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// status is the run's current status.
func (r *run) status() protocol.WorkflowStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := protocol.WorkflowStatus{
		ID:        r.id,
		Group:     r.target.Group,
		State:     r.state,
		Placement: r.plan.placement,
		Replicas:  make([]string, len(r.target.Replicas)),
		Created:   r.created,
		Tasks:     make([]protocol.WorkflowTaskStatus, len(r.tasks)),
	}
	for i, rep := range r.target.Replicas {
		st.Replicas[i] = rep.ID
	}
	st.Finished, st.MakespanMS = r.endTimesLocked()
	for i, t := range r.tasks {
		ts := protocol.WorkflowTaskStatus{
			ID:     r.plan.tasks[i].ID,
			State:  t.state,
			CostMS: r.plan.tasks[i].Cost,
			Status: t.status,
			Error:  t.err,
			Start:  timePtr(t.start),
			Finish: timePtr(t.finish),
		}
		if t.state == protocol.TaskPending && r.readyLocked(i) {
			ts.State = protocol.TaskQueued
		}
		switch {
		case t.server >= 0:
			ts.Replica = r.target.Replicas[t.server].ID
		case t.state == protocol.TaskPending || t.state == protocol.TaskQueued:
			if s, ok := r.sched.Placement(i); ok && s >= 0 && s < len(r.target.Replicas) {
				ts.Replica = r.target.Replicas[s].ID
			}
		}
		st.Tasks[i] = ts
	}
	return st
}

// summary is the run's line in a list.
func (r *run) summary() protocol.WorkflowSummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := protocol.WorkflowSummary{ID: r.id, State: r.state, Placement: r.plan.placement, Tasks: len(r.tasks), Created: r.created}
	s.Finished, s.MakespanMS = r.endTimesLocked()
	return s
}

// endTimesLocked is the finish time and makespan (nil while running). Caller
// holds r.mu.
func (r *run) endTimesLocked() (*time.Time, *float64) {
	if r.state == protocol.WorkflowRunning {
		return nil, nil
	}
	f := r.finished
	ms := float64(f.Sub(r.created)) / float64(time.Millisecond)
	return &f, &ms
}

// readyLocked reports whether every predecessor of task i is done.
// Caller holds r.mu.
func (r *run) readyLocked(i int) bool {
	for _, p := range r.plan.preds[i] {
		if r.tasks[p].state != protocol.TaskDone {
			return false
		}
	}
	return true
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
