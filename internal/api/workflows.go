package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/workflow"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Error codes of the work-flow routes.
const (
	codeBodyTooLarge     = "body_too_large"       // 413: a work-flow over protocol.MaxWorkflowBytes
	codeInvalidWorkflow  = "invalid_workflow"     // 400: a malformed DAG (workflow.GraphError)
	codeUnknownWorkflow  = "unknown_workflow"     // 404
	codeWorkflowGroup    = "workflow_unsupported" // 409: not an http group, or replicated
	codeNoReplica        = "no_replica"           // 503: no active replica to run on
	codeTooManyWorkflows = "too_many_workflows"   // 429
)

// maxWorkflowWait bounds GET .../workflows/{id}?wait=.
const maxWorkflowWait = time.Minute

// submitWorkflow serves POST /v1/groups/{name}/workflows: 202 with the
// work-flow's status and its URL in Location.
func (s *server) submitWorkflow(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, protocol.MaxWorkflowBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, apiError{
			Code: codeBodyTooLarge, Field: "body", Allowed: fmt.Sprintf("must be at most %d bytes (8 MiB)", protocol.MaxWorkflowBytes),
			Message: fmt.Sprintf("the work-flow is larger than %d bytes (8 MiB)", protocol.MaxWorkflowBytes),
		})
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, jsonBodyError(&protocol.FieldError{Field: "body", Allowed: "must be a complete request body (" + err.Error() + ")"}))
		return
	}
	var req protocol.WorkflowRequest
	if fe := unmarshalStrict(data, &req); fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	st, err := s.b.SubmitWorkflow(name, req)
	if err != nil {
		s.workflowFail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/groups/"+name+"/workflows/"+st.ID)
	writeJSON(w, http.StatusAccepted, st)
}

// getWorkflow serves GET /v1/groups/{name}/workflows/{id}; with
// ?wait=DURATION (at most a minute) it answers once the work-flow has
// finished or the wait has passed.
func (s *server) getWorkflow(w http.ResponseWriter, r *http.Request) {
	var wait protocol.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := protocol.ParseDuration(v)
		if err != nil || d.D() > maxWorkflowWait {
			writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, &protocol.FieldError{Field: "wait", Value: v, Allowed: "must be a duration in [0s, 1m0s], such as \"10s\""}))
			return
		}
		wait = d
	}
	st, err := s.b.Workflow(r.PathValue("name"), r.PathValue("id"), wait.D())
	if err != nil {
		s.workflowFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// listWorkflows serves GET /v1/groups/{name}/workflows.
func (s *server) listWorkflows(w http.ResponseWriter, r *http.Request) {
	l, err := s.b.Workflows(r.PathValue("name"))
	if err != nil {
		s.workflowFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

// cancelWorkflow serves DELETE /v1/groups/{name}/workflows/{id}: 200 with
// the stopped work-flow's status (a finished one is left as it is).
func (s *server) cancelWorkflow(w http.ResponseWriter, r *http.Request) {
	st, err := s.b.CancelWorkflow(r.PathValue("name"), r.PathValue("id"))
	if err != nil {
		s.workflowFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// workflowFail maps the work-flow errors to statuses, and the others as
// fail does.
func (s *server) workflowFail(w http.ResponseWriter, r *http.Request, err error) {
	var ge *workflow.GraphError
	switch {
	case errors.As(err, &ge):
		field := "tasks"
		if ge.Index >= 0 {
			field = fmt.Sprintf("tasks[%d]", ge.Index)
		}
		writeError(w, http.StatusBadRequest, apiError{
			Code: codeInvalidWorkflow, Message: ge.Error(), Field: field,
			Allowed: fmt.Sprintf("tasks must form a DAG: unique ids, after lists naming tasks of the work-flow, no cycles, at most %d tasks", protocol.MaxWorkflowTasks),
		})
	case errors.Is(err, workflow.ErrUnknown):
		writeError(w, http.StatusNotFound, apiError{Code: codeUnknownWorkflow, Message: message(err)})
	case errors.Is(err, balancer.ErrWorkflowGroup):
		writeError(w, http.StatusConflict, apiError{Code: codeWorkflowGroup, Message: message(err), Field: "protocol", Allowed: "work-flows run on groups of protocol http whose binding is not replicated"})
	case errors.Is(err, workflow.ErrNoReplica):
		writeError(w, http.StatusServiceUnavailable, apiError{Code: codeNoReplica, Message: message(err)})
	case errors.Is(err, workflow.ErrBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, apiError{Code: codeTooManyWorkflows, Message: message(err)})
	case errors.Is(err, workflow.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, apiError{Code: codeShuttingDown, Message: message(err)})
	default:
		s.fail(w, r, err)
	}
}
