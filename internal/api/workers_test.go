package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// workerReg is a registration body of worker index of count at address.
func workerReg(address string, index, count int, extra ...any) map[string]any {
	body := map[string]any{"address": address, "worker": map[string]any{"index": index, "count": count}}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	return body
}

// replicaStatus finds a replica in GET /v1/groups/{name}.
func (e *env) replicaStatus(group, id string) protocol.ReplicaStatus {
	e.t.Helper()
	a := e.call("GET", "/v1/groups/"+group, e.admin, nil)
	want(e.t, a, http.StatusOK)
	var st protocol.GroupStatus
	a.decode(e.t, &st)
	for _, r := range st.Replicas {
		if r.ID == id {
			return r
		}
	}
	e.t.Fatalf("replica %s not in group %s", id, group)
	return protocol.ReplicaStatus{}
}

// TestRegisterWorkers: the first worker's registration creates the
// replica (201), a sibling's joins it (200, same id and token, no
// replace); a different count, or a registration without worker, is a
// 409 worker_conflict naming the field, unless replace.
func TestRegisterWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", nil)
	const addr = "http://127.0.0.1:9001"

	a := e.call("POST", "/v1/groups/g/replicas", "", workerReg(addr, 0, 2))
	want(t, a, http.StatusCreated)
	var first registered
	a.decode(t, &first)

	for _, index := range []int{1, 0} {
		a = e.call("POST", "/v1/groups/g/replicas", "", workerReg(addr+"/", index, 2))
		want(t, a, http.StatusOK)
		var sib registered
		a.decode(t, &sib)
		if sib.ID != first.ID || sib.Token != first.Token {
			t.Fatalf("worker %d joined as %+v, want id %s and the first worker's token", index, sib, first.ID)
		}
	}
	// A sibling sending replace joins too: the token stays.
	a = e.call("POST", "/v1/groups/g/replicas", "", workerReg(addr, 1, 2, "replace", true))
	want(t, a, http.StatusOK)
	var sib registered
	a.decode(t, &sib)
	if sib.ID != first.ID || sib.Token != first.Token {
		t.Fatalf("a sibling with replace got %+v, want the same id and token", sib)
	}
	if ws := e.replicaStatus("g", first.ID).Workers; ws == nil || ws.Count != 2 || ws.Reporting != 0 {
		t.Errorf("status workers %+v, want count 2, none reporting", ws)
	}

	got := wantError(t, e.call("POST", "/v1/groups/g/replicas", "", workerReg(addr, 0, 3)), http.StatusConflict, "worker_conflict", "worker.count")
	if got.ExistingID != first.ID || !strings.Contains(got.Message, "has 2 workers") || !strings.Contains(got.Message, "gives 3") {
		t.Errorf("count conflict %+v: want the stored (2) and given (3) counts and existing_id %s", got, first.ID)
	}
	got = wantError(t, e.call("POST", "/v1/groups/g/replicas", "", map[string]any{"address": addr}), http.StatusConflict, "worker_conflict", "worker")
	if got.ExistingID != first.ID || !strings.Contains(got.Message, "multi-process") {
		t.Errorf("conflict of a single-process registration: %+v", got)
	}

	// Replace with another count takes the replica over: same id, fresh
	// token, the new count; the old token is revoked.
	a = e.call("POST", "/v1/groups/g/replicas", "", workerReg(addr, 0, 3, "replace", true))
	want(t, a, http.StatusOK)
	var re registered
	a.decode(t, &re)
	if re.ID != first.ID || re.Token == first.Token {
		t.Fatalf("replace with 3 workers gave %+v", re)
	}
	wantError(t, e.call("POST", "/v1/report", first.Token, `{"load":1,"worker":{"index":0,"count":2}}`), http.StatusUnauthorized, "unauthorized", "")
	if ws := e.replicaStatus("g", first.ID).Workers; ws == nil || ws.Count != 3 {
		t.Errorf("status workers %+v after replace, want count 3", ws)
	}

	// A single-process replica refuses a worker's registration.
	single := e.mustRegister("g", "http://127.0.0.1:9002")
	got = wantError(t, e.call("POST", "/v1/groups/g/replicas", "", workerReg("http://127.0.0.1:9002", 0, 2)), http.StatusConflict, "worker_conflict", "worker")
	if got.ExistingID != single.ID || !strings.Contains(got.Message, "single-process") {
		t.Errorf("conflict of a worker registration: %+v", got)
	}
	if ws := e.replicaStatus("g", single.ID).Workers; ws != nil {
		t.Errorf("a single-process replica's status has workers %+v", ws)
	}
}

func TestRegisterWorkersBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", nil)
	const addr = "http://127.0.0.1:9001"
	tests := []struct {
		name        string
		body        any
		status      int
		code, field string
	}{
		{"index at count", workerReg(addr, 2, 2), 400, "invalid_value", "worker.index"},
		{"negative index", workerReg(addr, -1, 2), 400, "invalid_value", "worker.index"},
		{"zero count", workerReg(addr, 0, 0), 400, "invalid_value", "worker.count"},
		{"count too large", workerReg(addr, 0, protocol.MaxWorkers+1), 400, "invalid_value", "worker.count"},
		{"pull mode", workerReg(addr, 0, 2, "monitor", map[string]any{"mode": "pull", "url": addr + "/r"}), 400, "invalid_value", "worker"},
		{"fractional index", `{"address":"` + addr + `","worker":{"index":0.5,"count":2}}`, 400, "invalid_json", "worker.index"},
		{"unknown worker key", `{"address":"` + addr + `","worker":{"index":0,"count":2,"pid":7}}`, 400, "invalid_json", "worker.pid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := wantError(t, e.call("POST", "/v1/groups/g/replicas", "", tc.body), tc.status, tc.code, tc.field)
			if got.Allowed == "" {
				t.Errorf("%+v does not say what is allowed", got)
			}
		})
	}
	// Nothing was registered.
	want(t, e.call("POST", "/v1/groups/g/replicas", "", workerReg(addr, 0, 2)), http.StatusCreated)
}

// TestReportWorkerMismatch: a report's worker must match the replica's
// registration: 400 naming the field.
func TestReportWorkerMismatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", nil)
	single := e.mustRegister("g", "http://127.0.0.1:9002")
	a := e.call("POST", "/v1/groups/g/replicas", "", workerReg("http://127.0.0.1:9001", 0, 2))
	want(t, a, http.StatusCreated)
	var multi registered
	a.decode(t, &multi)

	tests := []struct {
		name, token, body, field string
	}{
		{"worker for a single-process replica", single.Token, `{"load":1,"worker":{"index":0,"count":2}}`, "worker"},
		{"no worker for a multi-process replica", multi.Token, `{"load":1}`, "worker"},
		{"another count", multi.Token, `{"load":1,"worker":{"index":0,"count":3}}`, "worker.count"},
		{"index at count", multi.Token, `{"load":1,"worker":{"index":2,"count":2}}`, "worker.index"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, e.call("POST", "/v1/report", tc.token, tc.body), http.StatusBadRequest, "invalid_value", tc.field)
		})
	}
	want(t, e.call("POST", "/v1/report", multi.Token, `{"load":1,"worker":{"index":1,"count":2}}`), http.StatusOK)
	want(t, e.call("POST", "/v1/report", single.Token, `{"load":1}`), http.StatusOK)
}
