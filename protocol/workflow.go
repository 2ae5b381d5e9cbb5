package protocol

// WorkflowSettings configure a group's work-flows (POST
// /v1/groups/{name}/workflows; docs/api.md "Work-flows").
type WorkflowSettings struct {
	// Parallel is k of the EFT scheduler: a replica runs at most this many
	// of a work-flow's tasks at once, further tasks queue in order;
	// default 2, range [1, 1024].
	Parallel int `json:"parallel,omitempty" yaml:"parallel,omitempty"`
}
