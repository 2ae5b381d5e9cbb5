package workflow

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/eft"
)

// scheduler decides where and when a work-flow's tasks run: *eft.Core
// (placement eft) or roundRobin. Not safe for concurrent use: a run
// calls it under its lock.
type scheduler interface {
	// Dispatch returns the tasks to start now, each once, on which
	// server.
	Dispatch(now time.Time) []eft.Dispatch
	// Done records that a dispatched task finished at now.
	Done(task int, now time.Time)
	// Failed records that a dispatched task failed at now; its
	// successors will never be dispatched.
	Failed(task int, now time.Time)
	// Placement is the task's planned or actual server.
	Placement(task int) (server int, ok bool)
	// Finished reports whether every task is done, failed or skipped.
	Finished() bool
}

var _ scheduler = (*eft.Core)(nil)
