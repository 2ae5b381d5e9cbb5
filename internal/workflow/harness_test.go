package workflow_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fulcrum-lb/fulcrum/internal/workflow"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// replica is a real HTTP replica that records its calls and counts the
// calls it runs at once.
type replica struct {
	id  string
	srv *httptest.Server
	j   *journal

	mu       sync.Mutex
	inflight int
	most     int
	calls    []string // paths, in arrival order
	// handle, when set, answers the call (after it is counted in).
	handle func(w http.ResponseWriter, r *http.Request)
}

func newReplica(t *testing.T, id string, j *journal) *replica {
	t.Helper()
	rp := &replica{id: id, j: j}
	rp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.mu.Lock()
		rp.inflight++
		rp.most = max(rp.most, rp.inflight)
		rp.calls = append(rp.calls, r.URL.RequestURI())
		h := rp.handle
		rp.mu.Unlock()
		rp.j.note("start " + r.URL.Path)
		// The call ends for the replica when its answer is written:
		// counted out and noted before the client can see it.
		ew := &endWriter{ResponseWriter: w, end: func() {
			rp.mu.Lock()
			rp.inflight--
			rp.mu.Unlock()
			rp.j.note("end " + r.URL.Path)
		}}
		if h == nil {
			h = func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
		}
		h(ew, r)
		ew.ended()
	}))
	t.Cleanup(rp.srv.Close)
	return rp
}

func (rp *replica) setHandler(h func(w http.ResponseWriter, r *http.Request)) {
	rp.mu.Lock()
	rp.handle = h
	rp.mu.Unlock()
}

// seen returns the paths the replica was called with.
func (rp *replica) seen() []string {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return append([]string(nil), rp.calls...)
}

func (rp *replica) mostAtOnce() int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.most
}

// target is a work-flow target over the replicas.
func target(t *testing.T, k int, reps ...*replica) workflow.Target {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	tg := workflow.Target{Group: "g", Parallel: k, Transport: tr, CallTimeout: 10 * time.Second}
	for _, rp := range reps {
		u, err := url.Parse(rp.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		tg.Replicas = append(tg.Replicas, workflow.Replica{ID: rp.id, URL: u})
	}
	return tg
}

// newExecutor is an executor closed at the test's end.
func newExecutor(t *testing.T, opts workflow.Options) *workflow.Executor {
	t.Helper()
	x := workflow.New(opts)
	t.Cleanup(x.Close)
	return x
}

// parse decodes a JSON work-flow request.
func parse(t *testing.T, body string) protocol.WorkflowRequest {
	t.Helper()
	var req protocol.WorkflowRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("test request does not decode: %v", err)
	}
	return req
}

// submitAndWait runs a work-flow to its end (bounded by 10 s).
func submitAndWait(t *testing.T, x *workflow.Executor, tg workflow.Target, req protocol.WorkflowRequest) protocol.WorkflowStatus {
	t.Helper()
	st, err := x.Submit(tg, req)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err = x.Wait(ctx, tg.Group, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.State == protocol.WorkflowRunning {
		t.Fatalf("the work-flow did not finish in 10 s: %+v", st)
	}
	return st
}

// byID indexes a status's tasks.
func byID(st protocol.WorkflowStatus) map[string]protocol.WorkflowTaskStatus {
	m := map[string]protocol.WorkflowTaskStatus{}
	for _, ts := range st.Tasks {
		m[ts.ID] = ts
	}
	return m
}

// journal records the calls' starts and ends across replicas, in order.
type journal struct {
	mu     sync.Mutex
	events []string
}

// note appends an event; a nil journal records nothing.
func (j *journal) note(ev string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	j.events = append(j.events, ev)
	j.mu.Unlock()
}

// at is the position of an event (-1: absent).
func (j *journal) at(ev string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, e := range j.events {
		if e == ev {
			return i
		}
	}
	return -1
}

// endWriter calls end once, before the answer's first byte is written.
type endWriter struct {
	http.ResponseWriter
	end  func()
	done bool
}

func (w *endWriter) ended() {
	if !w.done {
		w.done = true
		w.end()
	}
}

func (w *endWriter) WriteHeader(code int) {
	w.ended()
	w.ResponseWriter.WriteHeader(code)
}

func (w *endWriter) Write(b []byte) (int, error) {
	w.ended()
	return w.ResponseWriter.Write(b)
}
