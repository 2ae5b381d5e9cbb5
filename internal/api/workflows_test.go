package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// countingReplica is a real HTTP replica that records the paths it
// served.
type countingReplica struct {
	srv   *httptest.Server
	mu    sync.Mutex
	paths []string
}

func newCountingReplica(t *testing.T) *countingReplica {
	t.Helper()
	return newHoldingReplica(t, "", nil, nil)
}

// newHoldingReplica is a countingReplica that, on a call to hold, says so
// on arrived and answers once release is closed.
func newHoldingReplica(t *testing.T, hold string, arrived chan<- struct{}, release <-chan struct{}) *countingReplica {
	t.Helper()
	c := &countingReplica{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold != "" && r.URL.Path == hold {
			arrived <- struct{}{}
			<-release
		}
		c.mu.Lock()
		c.paths = append(c.paths, r.URL.Path)
		c.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func TestWorkflowOnRealReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("shop", map[string]any{
		"binding":  "per-request",
		"strategy": "ett",
		"params":   map[string]any{"paths": map[string]any{"/slow": map[string]any{"cpu": 0.05}}},
	})
	reps := map[string]*countingReplica{}
	for range 2 {
		c := newCountingReplica(t)
		reps[e.mustRegister("shop", c.srv.URL).ID] = c
	}
	a := e.call("POST", "/v1/groups/shop/workflows", adminToken, map[string]any{"tasks": []map[string]any{
		{"id": "open", "method": "POST", "path": "/cart/open", "state_group": "cart", "cost_ms": 5},
		{"id": "price", "path": "/slow/7"},
		{"id": "quote", "path": "/slow/8"},
		{"id": "add", "method": "POST", "path": "/cart/add", "body": `{"sku": 7}`, "content_type": "application/json", "state_group": "cart",
			"after": []map[string]any{{"id": "open"}, {"id": "price", "cost_ms": 2}}},
		{"id": "pay", "method": "POST", "path": "/cart/pay", "state_group": "cart", "after": []map[string]any{{"id": "add", "timeout": "30s"}, {"id": "quote"}}},
	}})
	want(t, a, http.StatusAccepted)
	var st protocol.WorkflowStatus
	a.decode(t, &st)
	if loc := a.header.Get("Location"); loc != "/v1/groups/shop/workflows/"+st.ID || st.ID == "" {
		t.Fatalf("Location %q for work-flow %q", loc, st.ID)
	}
	// The 202 body is the work-flow as it stood when answered: these
	// replicas answer in microseconds, so it may have finished already.
	if (st.State != protocol.WorkflowRunning && st.State != protocol.WorkflowDone) || st.Group != "shop" || len(st.Replicas) != 2 || len(st.Tasks) != 5 {
		t.Fatalf("202 body %+v, want a running (or already done) work-flow of 5 tasks on 2 replicas", st)
	}
	a = e.call("GET", a.header.Get("Location")+"?wait=10s", adminToken, nil)
	want(t, a, http.StatusOK)
	a.decode(t, &st)
	if st.State != protocol.WorkflowDone || st.MakespanMS == nil {
		t.Fatalf("work-flow %s, want done: %s", st.State, a.body)
	}
	tasks := map[string]protocol.WorkflowTaskStatus{}
	for _, ts := range st.Tasks {
		tasks[ts.ID] = ts
		if ts.State != protocol.TaskDone || ts.Status != http.StatusOK || reps[ts.Replica] == nil {
			t.Errorf("task %+v, want done with 200 on a registered replica", ts)
		}
	}
	if tasks["price"].CostMS != 50 || tasks["open"].CostMS != 5 {
		t.Errorf("costs: price %g ms (want ett's 0.05 s of a core: 50), open %g (want 5)", tasks["price"].CostMS, tasks["open"].CostMS)
	}
	cart := tasks["open"].Replica
	for id, c := range reps {
		carts := 0
		c.mu.Lock()
		for _, p := range c.paths {
			if strings.HasPrefix(p, "/cart/") {
				carts++
			}
		}
		c.mu.Unlock()
		if want := map[bool]int{true: 3, false: 0}[id == cart]; carts != want {
			t.Errorf("replica %s served %d cart calls, want %d", id, carts, want)
		}
	}

	var l protocol.WorkflowList
	a = e.call("GET", "/v1/groups/shop/workflows", adminToken, nil)
	want(t, a, http.StatusOK)
	a.decode(t, &l)
	if len(l.Workflows) != 1 || l.Workflows[0].ID != st.ID || l.Workflows[0].Tasks != 5 || l.Workflows[0].State != protocol.WorkflowDone {
		t.Errorf("list %s, want the one done work-flow", a.body)
	}
	a = e.call("DELETE", "/v1/groups/shop/workflows/"+st.ID, adminToken, nil)
	want(t, a, http.StatusOK)
	a.decode(t, &st)
	if st.State != protocol.WorkflowDone {
		t.Errorf("DELETE of a finished work-flow left it %s, want done", st.State)
	}
	wantError(t, e.call("GET", "/v1/groups/shop/workflows/"+st.ID, "", nil), http.StatusUnauthorized, "unauthorized", "")
}

func TestWorkflowRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("shop", nil)
	e.mustRegister("shop", newCountingReplica(t).srv.URL)
	e.mustGroup("empty", nil)
	e.mustGroup("primes", map[string]any{"protocol": "giop", "giop": map[string]any{"locate": "here"}})
	task := func(id string, extra string) string { return fmt.Sprintf(`{"id": %q, "path": "/"%s}`, id, extra) }
	var many []string
	for i := range protocol.MaxWorkflowTasks + 1 {
		many = append(many, task(fmt.Sprintf("t%d", i), ""))
	}
	tests := []struct {
		name   string
		group  string
		body   string
		status int
		code   string
		field  string
		msg    string
	}{
		{"unknown field", "shop", `{"tasks": [{"id": "a", "path": "/", "bogus": 1}]}`, 400, "invalid_json", "tasks[0].bogus", "not a known field"},
		{"wrong type", "shop", `{"tasks": [{"id": "a", "path": "/", "cost_ms": "fast"}]}`, 400, "invalid_json", "tasks.cost_ms", "number"},
		{"not JSON", "shop", `{"tasks": [`, 400, "invalid_json", "body", "valid JSON"},
		{"no tasks", "shop", `{"tasks": []}`, 400, "invalid_value", "tasks", "at least one task"},
		{"method", "shop", `{"tasks": [` + task("a", `, "method": "TRACE"`) + `]}`, 400, "invalid_value", "tasks[0].method", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"},
		{"path", "shop", `{"tasks": [{"id": "a", "path": "http://elsewhere/"}]}`, 400, "invalid_value", "tasks[0].path", `starting with \"/\"`},
		{"placement", "shop", `{"placement": "fastest", "tasks": [` + task("a", "") + `]}`, 400, "invalid_value", "placement", "round-robin"},
		{"timeout", "shop", `{"tasks": [` + task("a", "") + `, ` + task("b", `, "after": [{"id": "a", "timeout": "soon"}]`) + `]}`, 400, "invalid_json", "tasks[1].after[0].timeout", "duration"},
		{"duplicate id", "shop", `{"tasks": [` + task("a", "") + `, ` + task("a", "") + `]}`, 400, "invalid_workflow", "tasks[1]", `task \"a\": duplicate id`},
		{"unknown id", "shop", `{"tasks": [` + task("a", `, "after": [{"id": "ghost"}]`) + `]}`, 400, "invalid_workflow", "tasks[0]", `after unknown task \"ghost\"`},
		{"cycle", "shop", `{"tasks": [` + task("a", `, "after": [{"id": "b"}]`) + `, ` + task("b", `, "after": [{"id": "a"}]`) + `]}`, 400, "invalid_workflow", "", "on a cycle"},
		{"too many tasks", "shop", `{"tasks": [` + strings.Join(many, ",") + `]}`, 400, "invalid_workflow", "tasks[10000]", `task \"t10000\"`},
		{"too large", "shop", `{"tasks": [` + task("a", `, "body": "`+strings.Repeat("x", protocol.MaxWorkflowBytes)+`"`) + `]}`, 413, "body_too_large", "body", "8 MiB"},
		{"unknown group", "nope", `{"tasks": [` + task("a", "") + `]}`, 404, "unknown_group", "", "nope"},
		{"giop group", "primes", `{"tasks": [` + task("a", "") + `]}`, 409, "workflow_unsupported", "protocol", "giop"},
		{"no replica", "empty", `{"tasks": [` + task("a", "") + `]}`, 503, "no_replica", "", "no active replica"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := e.call("POST", "/v1/groups/"+tt.group+"/workflows", "", tt.body)
			want(t, a, tt.status)
			got := a.err(t)
			if got.Code != tt.code || (tt.field != "" && got.Field != tt.field) || !strings.Contains(string(a.body), tt.msg) {
				t.Fatalf("error %s, want code %s field %q mentioning %s", a.body, tt.code, tt.field, tt.msg)
			}
			if tt.name == "cycle" && got.Field != "tasks[0]" && got.Field != "tasks[1]" {
				t.Fatalf("cycle error names %q, want a task on the cycle", got.Field)
			}
		})
	}
	t.Run("status", func(t *testing.T) {
		t.Parallel()
		wantError(t, e.call("GET", "/v1/groups/shop/workflows/nope", "", nil), http.StatusNotFound, "unknown_workflow", "")
		wantError(t, e.call("DELETE", "/v1/groups/shop/workflows/nope", "", nil), http.StatusNotFound, "unknown_workflow", "")
		wantError(t, e.call("GET", "/v1/groups/shop/workflows/nope?wait=2m", "", nil), http.StatusBadRequest, "invalid_value", "wait")
		wantError(t, e.call("GET", "/v1/groups/nope/workflows", "", nil), http.StatusNotFound, "unknown_group", "")
	})
}

// TestWorkflowParallelSetting: with workflow.parallel 1, a replica holding
// its call has the work-flow's other tasks for it queued.
func TestWorkflowParallelSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("shop", map[string]any{"workflow": map[string]any{"parallel": 1}})
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	for range 2 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			arrived <- struct{}{}
			<-release
		}))
		t.Cleanup(srv.Close)
		e.mustRegister("shop", srv.URL)
	}
	var tasks []map[string]any
	for i := range 4 {
		tasks = append(tasks, map[string]any{"id": fmt.Sprint(i), "path": "/", "cost_ms": 10})
	}
	a := e.call("POST", "/v1/groups/shop/workflows", "", map[string]any{"tasks": tasks})
	want(t, a, http.StatusAccepted)
	<-arrived
	<-arrived // one call held on each replica (EFT puts two of the four equal tasks on each)
	var st protocol.WorkflowStatus
	e.call("GET", a.header.Get("Location"), "", nil).decode(t, &st)
	close(release)
	count := map[string]int{}
	for _, ts := range st.Tasks {
		count[ts.State]++
	}
	if count[protocol.TaskRunning] != 2 || count[protocol.TaskQueued] != 2 {
		t.Errorf("with a call held on each replica: %v, want 2 running and 2 queued (k = 1)", count)
	}
	e.call("GET", a.header.Get("Location")+"?wait=10s", "", nil).decode(t, &st)
	if st.State != protocol.WorkflowDone {
		t.Errorf("work-flow %s, want done", st.State)
	}
}

// TestWorkflowReplicaDrainedMidway: a replica drained while the
// work-flow's first task runs is gone for the tasks planned on it: the
// stateless ones run on the other replica, the stateful one fails (its
// session would have lived there). Worked out by hand: "first" (held)
// runs on r0, the first registered; phase 1 places state group "two"
// (rank 20: two, then two-b) on r0 and "one" (rank 10) on r1.
func TestWorkflowReplicaDrainedMidway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("shop", nil)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	var ids []string
	paths := map[int]*countingReplica{}
	for i := range 2 {
		hold := ""
		if i == 0 {
			hold = "/first"
		}
		c := newHoldingReplica(t, hold, arrived, release)
		paths[i] = c
		ids = append(ids, e.mustRegister("shop", c.srv.URL).ID)
	}
	after := []map[string]any{{"id": "first"}}
	a := e.call("POST", "/v1/groups/shop/workflows", "", map[string]any{"tasks": []map[string]any{
		{"id": "first", "path": "/first", "cost_ms": 10},
		{"id": "x", "path": "/x", "cost_ms": 10, "after": after},
		{"id": "y", "path": "/y", "cost_ms": 10, "after": after},
		{"id": "z", "path": "/z", "cost_ms": 10, "after": after},
		{"id": "one", "path": "/one", "cost_ms": 10, "state_group": "one", "after": after},
		{"id": "two", "path": "/two", "cost_ms": 10, "state_group": "two", "after": after},
		{"id": "two-b", "path": "/two-b", "cost_ms": 10, "state_group": "two", "after": []map[string]any{{"id": "two"}}},
	}})
	want(t, a, http.StatusAccepted)
	<-arrived
	want(t, e.call("POST", "/v1/groups/shop/replicas/"+ids[1]+"/drain", "", nil), http.StatusOK)
	close(release)
	var st protocol.WorkflowStatus
	e.call("GET", a.header.Get("Location")+"?wait=10s", "", nil).decode(t, &st)
	tasks := map[string]protocol.WorkflowTaskStatus{}
	for _, ts := range st.Tasks {
		tasks[ts.ID] = ts
	}
	for _, id := range []string{"first", "x", "y", "z", "two", "two-b"} {
		if ts := tasks[id]; ts.State != protocol.TaskDone || ts.Replica != ids[0] {
			t.Errorf("%s = %+v, want done on %s", id, ts, ids[0])
		}
	}
	if one := tasks["one"]; one.State != protocol.TaskFailed || one.Replica != ids[1] || !strings.Contains(one.Error, "is gone") {
		t.Errorf("one = %+v, want failed on the drained %s: its session's replica is gone", one, ids[1])
	}
	if st.State != protocol.WorkflowFailed {
		t.Errorf("work-flow %s, want failed", st.State)
	}
	paths[1].mu.Lock()
	defer paths[1].mu.Unlock()
	if n := len(paths[1].paths); n != 0 {
		t.Errorf("the drained replica took %d calls: %v", n, paths[1].paths)
	}
}
