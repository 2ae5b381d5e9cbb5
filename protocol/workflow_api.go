package protocol

import "time"

// Work-flows (POST /v1/groups/{name}/workflows; docs/api.md "Work-flows"):
// a DAG of calls that fulcrum places on a group's replicas with the EFT
// scheduler of Chen et al. (§IV.B) and runs in dependency order.

// Placements of a work-flow's tasks (WorkflowRequest.Placement).
const (
	// PlacementEFT ranks the tasks, places the stateful groups by group
	// load, then each task on the replica of minimum earliest finish time
	// (the default).
	PlacementEFT = "eft"
	// PlacementRoundRobin places the tasks, in dependency order, on the
	// replicas in turn; a state group's later tasks follow its first
	// (the baseline EFT is compared with).
	PlacementRoundRobin = "round-robin"
)

// States of a work-flow (WorkflowStatus.State).
const (
	WorkflowRunning   = "running"
	WorkflowDone      = "done"      // every task done
	WorkflowFailed    = "failed"    // a task failed (its successors skipped)
	WorkflowCancelled = "cancelled" // DELETE stopped it
)

// States of a work-flow's task (WorkflowTaskStatus.State).
const (
	TaskPending = "pending" // a predecessor has not finished
	TaskQueued  = "queued"  // ready, waiting for a slot on its replica
	TaskRunning = "running"
	TaskDone    = "done"    // the replica answered 1xx–3xx
	TaskFailed  = "failed"  // 4xx, 5xx, no answer, or its replica is gone
	TaskSkipped = "skipped" // a predecessor failed, or the work-flow was cancelled
)

// Bounds of a work-flow request.
const (
	// MaxWorkflowBytes bounds the body of POST .../workflows (8 MiB).
	MaxWorkflowBytes = 8 << 20
	// MaxWorkflowTasks bounds a work-flow's tasks (eft.MaxTasks).
	MaxWorkflowTasks = 10000
	// MaxWorkflowParallel bounds workflow.parallel.
	MaxWorkflowParallel = 1024
	// DefaultWorkflowParallel is workflow.parallel when unset.
	DefaultWorkflowParallel = 2
)

// WorkflowRequest is the body of POST /v1/groups/{name}/workflows.
type WorkflowRequest struct {
	// Tasks are the work-flow's calls, at least one and at most
	// MaxWorkflowTasks, each id once.
	Tasks []WorkflowTask `json:"tasks"`
	// Placement is eft (default) or round-robin.
	Placement string `json:"placement,omitempty"`
}

// WorkflowTask is one call of a work-flow.
type WorkflowTask struct {
	// ID names the task in after lists and in the status: 1 to 128
	// printable characters, unique in the work-flow.
	ID string `json:"id"`
	// Method is the call's HTTP method: GET (default), HEAD, POST, PUT,
	// PATCH, DELETE or OPTIONS.
	Method string `json:"method,omitempty"`
	// Path is the call's path and query ("/orders/7?full=1"), sent to the
	// replica the task is placed on.
	Path string `json:"path"`
	// Body is the call's body, sent byte for byte as its UTF-8 encoding
	// (a JSON string: embed a JSON document as text). Empty: no body.
	Body string `json:"body,omitempty"`
	// ContentType is the Content-Type header sent with the body; none when
	// empty.
	ContentType string `json:"content_type,omitempty"`
	// CostMS is the task's computation cost w_i in milliseconds; when
	// omitted, the group's ett estimate of a call to Path.
	CostMS *float64 `json:"cost_ms,omitempty"`
	// StateGroup names the session the task belongs to: the tasks of one
	// state group run on one replica (a timeout edge may start a new
	// one); empty: stateless.
	StateGroup string `json:"state_group,omitempty"`
	// After are the task's predecessors: it starts once they have all
	// finished.
	After []WorkflowEdge `json:"after,omitempty"`
}

// WorkflowEdge is a dependency on a predecessor task.
type WorkflowEdge struct {
	// ID is the predecessor's id.
	ID string `json:"id"`
	// CostMS is the communication cost c(i,j) in milliseconds (default 0).
	CostMS float64 `json:"cost_ms,omitempty"`
	// Timeout marks a timeout edge: a session left idle this long expires,
	// and the task's state group may then move (Chen et al.'s dotted
	// edge); a duration such as "500ms". Zero: an ordinary edge.
	Timeout Duration `json:"timeout,omitempty"`
}

// WorkflowStatus is a work-flow's state: the answer of POST (202) and GET
// /v1/groups/{name}/workflows/{id}.
type WorkflowStatus struct {
	ID        string `json:"id"`
	Group     string `json:"group"`
	State     string `json:"state"`
	Placement string `json:"placement"`
	// Replicas are the ids of the replicas the work-flow runs on: the
	// group's active replicas when it was submitted.
	Replicas []string  `json:"replicas"`
	Created  time.Time `json:"created"`
	// Finished is when the last task finished (absent while running).
	Finished *time.Time `json:"finished,omitempty"`
	// MakespanMS is Finished − Created in milliseconds (absent while
	// running).
	MakespanMS *float64 `json:"makespan_ms,omitempty"`
	// Tasks are in the request's order.
	Tasks []WorkflowTaskStatus `json:"tasks"`
}

// WorkflowTaskStatus is one task's state.
type WorkflowTaskStatus struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// CostMS is the cost the scheduler used (the estimate when the
	// request gave none).
	CostMS float64 `json:"cost_ms"`
	// Replica is the id of the replica the task ran or is planned on
	// (absent while not yet placed).
	Replica string     `json:"replica,omitempty"`
	Start   *time.Time `json:"start,omitempty"`
	Finish  *time.Time `json:"finish,omitempty"`
	// Status is the replica's HTTP status (0: no answer).
	Status int `json:"status,omitempty"`
	// Error says why the task failed or was skipped.
	Error string `json:"error,omitempty"`
}

// WorkflowSummary is one work-flow in GET /v1/groups/{name}/workflows.
type WorkflowSummary struct {
	ID         string     `json:"id"`
	State      string     `json:"state"`
	Placement  string     `json:"placement"`
	Tasks      int        `json:"tasks"`
	Created    time.Time  `json:"created"`
	Finished   *time.Time `json:"finished,omitempty"`
	MakespanMS *float64   `json:"makespan_ms,omitempty"`
}

// WorkflowList is the body of GET /v1/groups/{name}/workflows: the
// group's running and kept work-flows, oldest first.
type WorkflowList struct {
	Workflows []WorkflowSummary `json:"workflows"`
}
