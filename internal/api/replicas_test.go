package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

var replicaIDRE = regexp.MustCompile(`^[a-z0-9-]+$`)

// replicaState finds a replica's state in GET /v1/groups/{name}.
func (e *env) replicaState(group, id string) string {
	e.t.Helper()
	a := e.call("GET", "/v1/groups/"+group, e.admin, nil)
	want(e.t, a, http.StatusOK)
	var st protocol.GroupStatus
	a.decode(e.t, &st)
	for _, r := range st.Replicas {
		if r.ID == id {
			return r.State
		}
	}
	return ""
}

func TestRegisterReplica(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", nil)

	a := e.call("POST", "/v1/groups/g/replicas", "", map[string]any{"address": "http://127.0.0.1:9001", "weight": 2})
	want(t, a, http.StatusCreated)
	var r registered
	a.decode(t, &r)
	if !replicaIDRE.MatchString(r.ID) || r.Token == "" || r.ReportInterval != "20ms" {
		t.Fatalf("registered %+v", r)
	}
	if r.ReportURL != e.srv.URL+"/v1/report" || !strings.HasPrefix(r.FrontDoor, "http://127.0.0.1:") {
		t.Errorf("report_url %q front_door %q", r.ReportURL, r.FrontDoor)
	}
	if a.header.Get("Location") != "/v1/groups/g/replicas/"+r.ID {
		t.Errorf("Location %q", a.header.Get("Location"))
	}
	if e.replicaState("g", r.ID) != "active" {
		t.Errorf("new replica not active")
	}

	// The same address again: 409 naming the existing id.
	a = e.call("POST", "/v1/groups/g/replicas", "", map[string]any{"address": "http://127.0.0.1:9001/"})
	got := wantError(t, a, http.StatusConflict, "duplicate_address", "address")
	if got.ExistingID != r.ID || !strings.Contains(got.Message, r.ID) {
		t.Errorf("409 does not name %s: %+v", r.ID, got)
	}

	// Replace: 200, same id, fresh token; the old token is revoked.
	a = e.call("POST", "/v1/groups/g/replicas", "", map[string]any{"address": "http://127.0.0.1:9001", "replace": true})
	want(t, a, http.StatusOK)
	var r2 registered
	a.decode(t, &r2)
	if r2.ID != r.ID || r2.Token == r.Token || r2.Token == "" {
		t.Fatalf("replace gave %+v, had %+v", r2, r)
	}
	wantError(t, e.call("POST", "/v1/report", r.Token, `{"load":1}`), http.StatusUnauthorized, "unauthorized", "")
	want(t, e.call("POST", "/v1/report", r2.Token, `{"load":1}`), http.StatusOK)
}

func TestRegisterBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", nil)
	tests := []struct {
		name, path  string
		body        any
		status      int
		code, field string
	}{
		{"unknown group", "/v1/groups/nope/replicas", `{"address":"http://127.0.0.1:9001"}`, 404, "unknown_group", ""},
		{"malformed", "/v1/groups/g/replicas", `{"address":`, 400, "invalid_json", "body"},
		{"unknown field", "/v1/groups/g/replicas", `{"addr":"http://127.0.0.1:9001"}`, 400, "invalid_json", "addr"},
		{"wrong type", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","weight":"heavy"}`, 400, "invalid_json", "weight"},
		{"bad interval", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","monitor":{"mode":"pull","url":"http://127.0.0.1:9001/load","interval":"often"}}`, 400, "invalid_json", "monitor.interval"},
		{"no address", "/v1/groups/g/replicas", `{}`, 400, "invalid_value", "address"},
		{"bad address", "/v1/groups/g/replicas", `{"address":"127.0.0.1:9001"}`, 400, "invalid_value", "address"},
		{"bad weight", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","weight":-1}`, 400, "invalid_value", "weight"},
		{"weight zero", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","weight":0}`, 400, "invalid_value", "weight"},
		{"weight zero as a float", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","weight":0.0}`, 400, "invalid_value", "weight"},
		{"weight zero in another case", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","Weight":-0}`, 400, "invalid_value", "weight"},
		{"duplicate address", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","address":"http://127.0.0.1:7070"}`, 400, "invalid_json", "address"},
		{"duplicate address in another case", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","Address":"http://127.0.0.1:7070"}`, 400, "invalid_json", "Address"},
		{"duplicate monitor key", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","monitor":{"mode":"push","mode":"pull"}}`, 400, "invalid_json", "monitor.mode"},
		{"bad mode", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","monitor":{"mode":"poll"}}`, 400, "invalid_value", "monitor.mode"},
		{"pull without url", "/v1/groups/g/replicas", `{"address":"http://127.0.0.1:9001","monitor":{"mode":"pull"}}`, 400, "invalid_value", "monitor.url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := wantError(t, e.call("POST", tc.path, "", tc.body), tc.status, tc.code, tc.field)
			if tc.status == 400 && got.Allowed == "" {
				t.Errorf("400 without allowed: %+v", got)
			}
		})
	}
}

func TestDrainActivateRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", nil)
	r := e.mustRegister("g", "http://127.0.0.1:9001")

	a := e.call("POST", "/v1/groups/g/replicas/"+r.ID+"/drain", "", nil)
	want(t, a, http.StatusOK)
	if !strings.Contains(string(a.body), `"state":"draining"`) || e.replicaState("g", r.ID) != "draining" {
		t.Fatalf("drain: %s", a.body)
	}
	a = e.call("POST", "/v1/groups/g/replicas/"+r.ID+"/activate", "", nil)
	want(t, a, http.StatusOK)
	if !strings.Contains(string(a.body), `"state":"active"`) || e.replicaState("g", r.ID) != "active" {
		t.Fatalf("activate: %s", a.body)
	}
	a = e.call("DELETE", "/v1/groups/g/replicas/"+r.ID, "", nil)
	want(t, a, http.StatusAccepted)
	if st := e.replicaState("g", r.ID); st != "draining" && st != "" {
		t.Fatalf("removed replica is %q, want draining (or gone)", st)
	}

	for _, tc := range []struct{ method, path, code string }{
		{"POST", "/v1/groups/g/replicas/r-nope/drain", "unknown_replica"},
		{"POST", "/v1/groups/g/replicas/r-nope/activate", "unknown_replica"},
		{"DELETE", "/v1/groups/g/replicas/r-nope", "unknown_replica"},
		{"POST", "/v1/groups/nope/replicas/" + r.ID + "/drain", "unknown_group"},
		{"DELETE", "/v1/groups/nope/replicas/" + r.ID, "unknown_group"},
	} {
		wantError(t, e.call(tc.method, tc.path, "", nil), http.StatusNotFound, tc.code, "")
	}
}
