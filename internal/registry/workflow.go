package registry

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// validateWorkflow checks g.Workflow: parallel is 0 (unset: the default,
// protocol.DefaultWorkflowParallel) or in [1, protocol.MaxWorkflowParallel],
// and set only on http groups (work-flows call replicas over HTTP).
func validateWorkflow(g protocol.Group) error {
	k := g.Workflow.Parallel
	if k == 0 {
		return nil
	}
	if g.Protocol != protocol.ProtocolHTTP {
		return &protocol.FieldError{Field: "workflow.parallel", Value: k, Allowed: "is only allowed with protocol http (work-flows call replicas over HTTP)"}
	}
	if k < 1 || k > protocol.MaxWorkflowParallel {
		return &protocol.FieldError{Field: "workflow.parallel", Value: k, Allowed: fmt.Sprintf("must be in [1,%d] (default %d)", protocol.MaxWorkflowParallel, protocol.DefaultWorkflowParallel)}
	}
	return nil
}

// WorkflowParallel is k of g's work-flows: workflow.parallel, or its
// default when unset.
func WorkflowParallel(g protocol.Group) int {
	if g.Workflow.Parallel > 0 {
		return g.Workflow.Parallel
	}
	return protocol.DefaultWorkflowParallel
}
