package workflow

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fulcrum-lb/fulcrum/internal/eft"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Bounds of a task's fields.
const (
	maxIDBytes          = 128
	maxPathBytes        = 8 << 10
	maxContentTypeBytes = 256
	// maxCostMS bounds cost_ms (a day).
	maxCostMS = 24 * 60 * 60 * 1000
	// maxEdgeTimeout bounds an edge's timeout.
	maxEdgeTimeout = 24 * time.Hour
)

// methods are the methods a task may call with.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// call is what a task sends.
type call struct {
	method, path, contentType string
	body                      []byte
}

// plan is a checked work-flow request: the scheduler's tasks, the calls,
// and the DAG by task index (the request's order).
type plan struct {
	placement string
	tasks     []eft.Task
	calls     []call
	// preds and succs are the immediate predecessors and successors.
	preds, succs [][]int
}

// compile checks req and prices the tasks without a cost_ms with
// estimate (milliseconds of a call to a path). Errors: a
// *protocol.FieldError naming the first bad field ("tasks[3].method"), or
// an *eft.GraphError naming the task of a malformed DAG (duplicate or
// unknown ids, a cycle, more than eft.MaxTasks tasks).
func compile(req protocol.WorkflowRequest, estimate func(path string) float64) (*plan, *eft.Graph, error) {
	p := &plan{placement: req.Placement}
	switch req.Placement {
	case "":
		p.placement = protocol.PlacementEFT
	case protocol.PlacementEFT, protocol.PlacementRoundRobin:
	default:
		return nil, nil, &protocol.FieldError{Field: "placement", Value: req.Placement, Allowed: "must be one of: eft (default), round-robin"}
	}
	if len(req.Tasks) == 0 {
		return nil, nil, &protocol.FieldError{Field: "tasks", Value: nil, Allowed: "must list at least one task"}
	}
	if len(req.Tasks) > eft.MaxTasks {
		// Checked before the fields, so that a huge list fails at once.
		return nil, nil, &GraphError{Index: eft.MaxTasks, GraphError: &eft.GraphError{
			Task:   req.Tasks[eft.MaxTasks].ID,
			Reason: fmt.Sprintf("is task %d of %d: a work-flow has at most %d tasks", eft.MaxTasks+1, len(req.Tasks), eft.MaxTasks),
		}}
	}
	p.tasks = make([]eft.Task, len(req.Tasks))
	p.calls = make([]call, len(req.Tasks))
	for i, t := range req.Tasks {
		c, cost, err := checkTask(i, t, estimate)
		if err != nil {
			return nil, nil, err
		}
		p.calls[i] = c
		et := eft.Task{ID: t.ID, Cost: cost, StateGroup: t.StateGroup}
		for j, e := range t.After {
			if err := checkEdge(fmt.Sprintf("tasks[%d].after[%d]", i, j), e); err != nil {
				return nil, nil, err
			}
			et.After = append(et.After, eft.Edge{From: e.ID, Cost: e.CostMS, Timeout: e.Timeout.D()})
		}
		p.tasks[i] = et
	}
	g, err := eft.NewGraph(p.tasks)
	if err != nil {
		return nil, nil, graphError(err, req.Tasks)
	}
	index := make(map[string]int, len(p.tasks))
	for i, t := range p.tasks {
		index[t.ID] = i
	}
	p.preds = make([][]int, len(p.tasks))
	p.succs = make([][]int, len(p.tasks))
	for i, t := range p.tasks {
		for _, e := range t.After {
			j := index[e.From]
			p.preds[i] = append(p.preds[i], j)
			p.succs[j] = append(p.succs[j], i)
		}
	}
	return p, g, nil
}

// GraphError is an *eft.GraphError with the index of the task it names
// in the request (the last of that id, so a duplicate's second; -1 when
// none), so that the API can name the field ("tasks[3]").
type GraphError struct {
	*eft.GraphError
	Index int
}

func (e *GraphError) Unwrap() error { return e.GraphError }

// graphError wraps eft.NewGraph's error.
func graphError(err error, tasks []protocol.WorkflowTask) error {
	ge, ok := err.(*eft.GraphError)
	if !ok {
		return fmt.Errorf("workflow: %w", err)
	}
	out := &GraphError{GraphError: ge, Index: -1}
	for i, t := range tasks {
		if t.ID == ge.Task {
			out.Index = i // the last of that id: a duplicate's second
		}
	}
	return out
}

// checkTask checks task i's fields and returns its call and cost.
func checkTask(i int, t protocol.WorkflowTask, estimate func(string) float64) (call, float64, error) {
	field := func(name string) string { return fmt.Sprintf("tasks[%d].%s", i, name) }
	if err := checkName(field("id"), t.ID, true); err != nil {
		return call{}, 0, err
	}
	method := t.Method
	if method == "" {
		method = "GET"
	}
	if !slices.Contains(methods, method) {
		return call{}, 0, &protocol.FieldError{Field: field("method"), Value: t.Method, Allowed: "must be one of: " + strings.Join(methods, ", ") + " (default GET)"}
	}
	if err := checkPath(t.Path); err != "" {
		return call{}, 0, &protocol.FieldError{Field: field("path"), Value: t.Path, Allowed: err}
	}
	if len(t.ContentType) > maxContentTypeBytes || strings.ContainsFunc(t.ContentType, unicode.IsControl) {
		return call{}, 0, &protocol.FieldError{Field: field("content_type"), Value: t.ContentType, Allowed: fmt.Sprintf("must be a media type of at most %d bytes without control characters", maxContentTypeBytes)}
	}
	if err := checkName(field("state_group"), t.StateGroup, false); err != nil {
		return call{}, 0, err
	}
	var cost float64
	if t.CostMS != nil {
		cost = *t.CostMS
		if err := checkCost(field("cost_ms"), cost); err != nil {
			return call{}, 0, err
		}
	} else {
		path, _, _ := strings.Cut(t.Path, "?")
		cost = estimate(path)
	}
	return call{method: method, path: t.Path, contentType: t.ContentType, body: []byte(t.Body)}, cost, nil
}

// checkEdge checks one entry of a task's after list; whether its id names
// a task is eft.NewGraph's to say.
func checkEdge(field string, e protocol.WorkflowEdge) error {
	if err := checkName(field+".id", e.ID, true); err != nil {
		return err
	}
	if err := checkCost(field+".cost_ms", e.CostMS); err != nil {
		return err
	}
	if e.Timeout.D() < 0 || e.Timeout.D() > maxEdgeTimeout {
		return &protocol.FieldError{Field: field + ".timeout", Value: e.Timeout.String(), Allowed: fmt.Sprintf("must be a duration in [0s, %s] (0: not a timeout edge)", maxEdgeTimeout)}
	}
	return nil
}

// checkName checks an id or a state group's name.
func checkName(field, v string, required bool) error {
	switch {
	case v == "" && !required:
		return nil
	case v == "", len(v) > maxIDBytes, !utf8.ValidString(v), strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }):
		return &protocol.FieldError{Field: field, Value: v, Allowed: fmt.Sprintf("must be 1 to %d bytes of printable UTF-8", maxIDBytes)}
	}
	return nil
}

func checkCost(field string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > maxCostMS {
		return &protocol.FieldError{Field: field, Value: v, Allowed: fmt.Sprintf("must be a number of milliseconds in [0,%d]", maxCostMS)}
	}
	return nil
}

// checkPath says what is wrong with a task's path ("" when nothing).
func checkPath(p string) string {
	const allowed = "must be a path and optional query starting with \"/\" (such as /orders/7?full=1), at most 8192 bytes, without spaces, control characters or a fragment"
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || len(p) > maxPathBytes || strings.ContainsAny(p, " #") || strings.ContainsFunc(p, unicode.IsControl) {
		return allowed
	}
	if _, err := url.ParseRequestURI(p); err != nil {
		return allowed + " (" + err.Error() + ")"
	}
	return ""
}
