package workflow_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/workflow"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestMalformedWorkflows(t *testing.T) {
	t.Parallel()
	r := newReplica(t, "r", nil)
	x := newExecutor(t, workflow.Options{})
	tg := target(t, 2, r)
	t.Cleanup(func() { // after the parallel subtests
		if len(r.seen()) != 0 {
			t.Errorf("a refused work-flow called the replica: %v", r.seen())
		}
	})
	over := make([]string, protocol.MaxWorkflowTasks+1)
	for i := range over {
		over[i] = fmt.Sprintf(`{"id": "t%d", "path": "/"}`, i)
	}
	tests := []struct {
		name string
		body string
		// field and want for a *protocol.FieldError; task, index and
		// want for a *workflow.GraphError.
		field string
		task  string
		index int
		want  string
	}{
		{name: "no tasks", body: `{"tasks": []}`, field: "tasks", want: "at least one task"},
		{name: "placement", body: `{"placement": "random", "tasks": [{"id": "a", "path": "/"}]}`, field: "placement", want: "eft (default), round-robin"},
		{name: "empty id", body: `{"tasks": [{"id": "", "path": "/"}]}`, field: "tasks[0].id", want: "1 to 128 bytes"},
		{name: "id with a newline", body: `{"tasks": [{"id": "a\nb", "path": "/"}]}`, field: "tasks[0].id", want: "printable"},
		{name: "method", body: `{"tasks": [{"id": "a", "method": "FETCH", "path": "/"}]}`, field: "tasks[0].method", want: "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"},
		{name: "lower-case method", body: `{"tasks": [{"id": "a", "method": "get", "path": "/"}]}`, field: "tasks[0].method", want: "GET, HEAD"},
		{name: "relative path", body: `{"tasks": [{"id": "a", "path": "orders"}]}`, field: "tasks[0].path", want: `starting with "/"`},
		{name: "host in path", body: `{"tasks": [{"id": "a", "path": "//evil.example/x"}]}`, field: "tasks[0].path", want: `starting with "/"`},
		{name: "space in path", body: `{"tasks": [{"id": "a", "path": "/a b"}]}`, field: "tasks[0].path", want: "without spaces"},
		{name: "fragment", body: `{"tasks": [{"id": "a", "path": "/a#b"}]}`, field: "tasks[0].path", want: "fragment"},
		{name: "content type", body: `{"tasks": [{"id": "a", "path": "/", "content_type": "text/plain\r\nX-Evil: 1"}]}`, field: "tasks[0].content_type", want: "control characters"},
		{name: "negative cost", body: `{"tasks": [{"id": "a", "path": "/", "cost_ms": -1}]}`, field: "tasks[0].cost_ms", want: "[0,86400000]"},
		{name: "edge id", body: `{"tasks": [{"id": "a", "path": "/"}, {"id": "b", "path": "/", "after": [{"id": ""}]}]}`, field: "tasks[1].after[0].id", want: "1 to 128 bytes"},
		{name: "edge cost", body: `{"tasks": [{"id": "a", "path": "/"}, {"id": "b", "path": "/", "after": [{"id": "a", "cost_ms": 1e12}]}]}`, field: "tasks[1].after[0].cost_ms", want: "[0,86400000]"},
		{name: "edge timeout", body: `{"tasks": [{"id": "a", "path": "/"}, {"id": "b", "path": "/", "after": [{"id": "a", "timeout": "48h"}]}]}`, field: "tasks[1].after[0].timeout", want: "[0s, 24h0m0s]"},
		{name: "duplicate id", body: `{"tasks": [{"id": "a", "path": "/"}, {"id": "a", "path": "/"}]}`, task: "a", index: 1, want: "duplicate id"},
		{name: "unknown id", body: `{"tasks": [{"id": "a", "path": "/"}, {"id": "b", "path": "/", "after": [{"id": "nope"}]}]}`, task: "b", index: 1, want: `after unknown task "nope"`},
		{name: "self cycle", body: `{"tasks": [{"id": "a", "path": "/", "after": [{"id": "a"}]}]}`, task: "a", index: 0, want: "cycle"},
		{name: "cycle", body: `{"tasks": [{"id": "a", "path": "/", "after": [{"id": "c"}]}, {"id": "b", "path": "/", "after": [{"id": "a"}]}, {"id": "c", "path": "/", "after": [{"id": "b"}]}, {"id": "d", "path": "/"}]}`, want: "on a cycle"},
		{name: "timeout edge across groups", body: `{"tasks": [{"id": "a", "path": "/", "state_group": "x"}, {"id": "b", "path": "/", "state_group": "y", "after": [{"id": "a", "timeout": "1s"}]}]}`, task: "b", index: 1, want: "one state group"},
		{name: "too many tasks", body: `{"tasks": [` + strings.Join(over, ",") + `]}`, task: "t10000", index: 10000, want: "at most 10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := x.Submit(tg, parse(t, tt.body))
			var (
				fe *protocol.FieldError
				ge *workflow.GraphError
			)
			switch {
			case tt.field != "":
				if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Error(), tt.want) {
					t.Fatalf("Submit = %v, want a field error on %s mentioning %q", err, tt.field, tt.want)
				}
			case tt.task == "": // a cycle: any task on it
				if !errors.As(err, &ge) || !strings.Contains(ge.Error(), tt.want) || ge.Task == "d" || ge.Index != map[string]int{"a": 0, "b": 1, "c": 2}[ge.Task] {
					t.Fatalf("Submit = %v, want a graph error naming a task on the cycle", err)
				}
			default:
				if !errors.As(err, &ge) || ge.Task != tt.task || ge.Index != tt.index || !strings.Contains(ge.Error(), tt.want) {
					t.Fatalf("Submit = %v (%+v), want a graph error naming task %q (index %d) mentioning %q", err, ge, tt.task, tt.index, tt.want)
				}
			}
		})
	}
}
