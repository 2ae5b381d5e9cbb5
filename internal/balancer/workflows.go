package balancer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/internal/workflow"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Work-flows (POST /v1/groups/{name}/workflows; docs/api.md "Work-flows")
// run in b.workflows (package workflow), which Shutdown closes. A
// work-flow runs on the group's active replicas at submission, sending
// each call straight to its replica with the balancer's Dial and the
// group's replica TLS, each bounded by the group's timeouts.request; a
// replica that stops being active (drained, down, ejected, removed)
// before one of its tasks starts is gone for that task. A work-flow goes
// on when its group is changed or deleted.

// ErrWorkflowGroup: the group cannot run work-flows: it is not an http
// group, or it is replicated (409).
var ErrWorkflowGroup = errors.New("balancer: work-flows need an http group that is not replicated")

// SubmitWorkflow starts a work-flow on group name. Errors:
// ErrUnknownGroup, ErrWorkflowGroup, and workflow.Executor.Submit's (a
// *protocol.FieldError, a *workflow.GraphError, workflow.ErrNoReplica,
// workflow.ErrBusy, workflow.ErrClosed).
func (b *Balancer) SubmitWorkflow(name string, req protocol.WorkflowRequest) (protocol.WorkflowStatus, error) {
	g, err := b.group(name)
	if err != nil {
		return protocol.WorkflowStatus{}, err
	}
	g.mu.Lock()
	spec := g.spec
	est := strategy.EstimatorOf(g.strat)
	g.mu.Unlock()
	if spec.Protocol != protocol.ProtocolHTTP || registry.IsReplicated(spec) {
		return protocol.WorkflowStatus{}, fmt.Errorf("%w: group %s is protocol %s, binding %s", ErrWorkflowGroup, name, spec.Protocol, spec.Binding)
	}
	k := registry.WorkflowParallel(spec)
	t := workflow.Target{
		Group:    name,
		Parallel: k,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         b.opts.Dial,
			DialTLSContext:      g.dialReplicaTLS("http/1.1"),
			MaxIdleConnsPerHost: k,
			IdleConnTimeout:     30 * time.Second,
		},
		CallTimeout: frontdoor.TimeoutsOf(spec.Timeouts).Request,
		Estimate:    est.EstimateMS,
		Alive: func(id string) bool {
			m := g.snap.Load().Members[id]
			return m != nil && m.State == protocol.StateActive
		},
	}
	for _, m := range g.snap.Load().Eligible {
		t.Replicas = append(t.Replicas, workflow.Replica{ID: m.ID(), URL: m.URL})
	}
	return b.workflows.Submit(t, req)
}

// Workflow is work-flow id of group name, once it has finished or wait
// has passed (0: at once). Errors: workflow.ErrUnknown.
func (b *Balancer) Workflow(name, id string, wait time.Duration) (protocol.WorkflowStatus, error) {
	if wait <= 0 {
		return b.workflows.Status(name, id)
	}
	ctx, cancel := context.WithTimeout(b.ctx, wait)
	defer cancel()
	return b.workflows.Wait(ctx, name, id)
}

// Workflows lists group name's running and kept work-flows. Errors:
// ErrUnknownGroup.
func (b *Balancer) Workflows(name string) (protocol.WorkflowList, error) {
	if _, err := b.group(name); err != nil {
		return protocol.WorkflowList{}, err
	}
	return protocol.WorkflowList{Workflows: b.workflows.List(name)}, nil
}

// CancelWorkflow stops work-flow id of group name (workflow.Executor.Cancel).
func (b *Balancer) CancelWorkflow(name, id string) (protocol.WorkflowStatus, error) {
	return b.workflows.Cancel(name, id)
}
