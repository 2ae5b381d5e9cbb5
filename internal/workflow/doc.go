// Package workflow runs work-flows (POST /v1/groups/{name}/workflows;
// docs/api.md "Work-flows"): DAGs of HTTP calls placed on a group's
// replicas by the EFT scheduler of Chen et al. (§IV.B, package eft) or,
// for comparison, round-robin. It is the thin concurrent layer over the
// pure eft.Core: one goroutine per running work-flow drives the core
// (Dispatch, then Done or Failed with each call's actual finish time, read
// from an injected clock) and one goroutine per call sends it.
//
// Contract:
//   - Servers are the group's active replicas when the work-flow is
//     submitted, in the balancer's order; a work-flow never uses a
//     replica that joins later.
//   - Each task's call goes straight to its replica (the replica's base
//     URL and the task's path), with the group's replica TLS and dialer,
//     bounded by the group's timeouts.request, redirects not followed.
//     A 1xx–3xx answer is done; 4xx, 5xx or no answer is failed, and
//     every task depending on it is skipped. Calls are not retried.
//   - At most k (workflow.parallel) of a work-flow's tasks run on a
//     replica at once; the scheduler queues the rest in rank order.
//   - A task whose replica is no longer active when it is about to start:
//     a stateless task goes to the live replica with the fewest of the
//     work-flow's tasks running and waiting (still at most k at once); a
//     stateful task fails (its state group's session lived there and is
//     lost), and the tasks depending on it are skipped.
//   - Finished work-flows stay visible for Options.Keep (default 1 h),
//     at most Options.MaxKept of them (default 1000, the oldest finished
//     forgotten first); at most Options.MaxRunning (default 32) run at
//     once (ErrBusy beyond).
//   - Cancel and Close abandon the calls in flight (failed, "cancelled")
//     and skip the tasks not started; Close waits for every goroutine.
//
// Usage:
//
//	x := workflow.New(workflow.Options{Clock: clk})
//	defer x.Close()
//	st, err := x.Submit(workflow.Target{Group: "g", Replicas: reps, Parallel: 2, Transport: tr}, req)
//	// err: *protocol.FieldError, *workflow.GraphError, ErrNoReplica, ErrBusy
//	st, err = x.Status("g", st.ID)
package workflow
