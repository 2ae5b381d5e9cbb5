package api_test

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestGroupLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})

	a := e.call("PUT", "/v1/groups/prime", "", group(map[string]any{"strategy": "least-loaded", "params": map[string]any{"dampening": 0.25}}))
	want(t, a, http.StatusCreated)
	if loc := a.header.Get("Location"); loc != "/v1/groups/prime" {
		t.Errorf("Location %q", loc)
	}
	var st protocol.GroupStatus
	a.decode(t, &st)
	if st.Name != "prime" || st.Binding != "on-demand" || st.Strategy != "least-loaded" || st.Listening == "" {
		t.Fatalf("created group %+v", st)
	}
	if st.Params["dampening"] != 0.25 || st.Params["tolerance"] == nil {
		t.Errorf("params %v: want dampening 0.25 and the other defaults", st.Params)
	}
	if !strings.Contains(string(a.body), `"report_interval":"20ms"`) {
		t.Errorf("durations must be Go duration strings: %s", a.body)
	}

	a = e.call("GET", "/v1/groups/prime", "", nil)
	want(t, a, http.StatusOK)
	a.decode(t, &st)
	if st.Name != "prime" || st.Replicas == nil {
		t.Fatalf("GET %s", a.body)
	}

	e.mustGroup("alpha", nil)
	a = e.call("GET", "/v1/groups", "", nil)
	want(t, a, http.StatusOK)
	var list struct {
		Groups []protocol.GroupStatus `json:"groups"`
	}
	a.decode(t, &list)
	if len(list.Groups) != 2 || list.Groups[0].Name != "alpha" || list.Groups[1].Name != "prime" {
		t.Fatalf("list %s", a.body)
	}

	// Replace: 200.
	a = e.call("PUT", "/v1/groups/prime", "", group(map[string]any{"name": "prime", "binding": "per-request"}))
	want(t, a, http.StatusOK)
	a.decode(t, &st)
	if st.Binding != "per-request" {
		t.Errorf("replaced binding %q", st.Binding)
	}

	// PATCH: strategy switch at run time, params merged.
	a = e.call("PATCH", "/v1/groups/prime", "", map[string]any{"strategy": "round-robin"})
	want(t, a, http.StatusOK)
	a.decode(t, &st)
	if st.Strategy != "round-robin" || st.Binding != "per-request" {
		t.Errorf("patched %+v", st.Group)
	}
	a = e.call("PATCH", "/v1/groups/prime", "", map[string]any{"strategy": "least-loaded", "params": map[string]any{"tolerance": 1.2}})
	want(t, a, http.StatusOK)
	a = e.call("PATCH", "/v1/groups/prime", "", map[string]any{"params": map[string]any{"dampening": 0.75}, "binding": "on-demand"})
	want(t, a, http.StatusOK)
	a.decode(t, &st)
	if st.Params["tolerance"] != 1.2 || st.Params["dampening"] != 0.75 || st.Binding != "on-demand" {
		t.Errorf("params not merged: %v, binding %s", st.Params, st.Binding)
	}

	want(t, e.call("DELETE", "/v1/groups/prime", "", nil), http.StatusNoContent)
	wantError(t, e.call("GET", "/v1/groups/prime", "", nil), http.StatusNotFound, "unknown_group", "")
	wantError(t, e.call("DELETE", "/v1/groups/prime", "", nil), http.StatusNotFound, "unknown_group", "")
}

func TestPutGroupCreateOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	want(t, e.call("PUT", "/v1/groups/g", "", group(nil), "If-None-Match", "*"), http.StatusCreated)
	wantError(t, e.call("PUT", "/v1/groups/g", "", group(nil), "If-None-Match", "*"), http.StatusPreconditionFailed, "group_exists", "name")
}

func TestPutGroupFrontDoorInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a := e.call("PUT", "/v1/groups/g", "", group(map[string]any{"front_door": ln.Addr().String()}))
	wantError(t, a, http.StatusConflict, "front_door_unavailable", "front_door")
	wantError(t, e.call("GET", "/v1/groups/g", "", nil), http.StatusNotFound, "unknown_group", "")
}

// TestGroupBadInput covers the "Bad input" cases on the group
// routes: malformed or oversized JSON names the field, invalid values and
// strategy params name the field and what is allowed.
func TestGroupBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{MaxBodyBytes: 4096}, balancer.Options{})
	e.mustGroup("g", nil)
	tests := []struct {
		name, method, path string
		body               any
		status             int
		code, field        string
		allowed            string // substring of allowed
	}{
		{"malformed", "PUT", "/v1/groups/x", `{"front_door": `, 400, "invalid_json", "body", "valid JSON"},
		{"syntax", "PUT", "/v1/groups/x", `{"front_door" "a"}`, 400, "invalid_json", "body", "valid JSON"},
		{"empty", "PUT", "/v1/groups/x", ``, 400, "invalid_json", "body", "JSON object"},
		{"not an object", "PUT", "/v1/groups/x", `[1,2]`, 400, "invalid_json", "body", "object"},
		{"trailing", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0"} {}`, 400, "invalid_json", "body", "single JSON object"},
		{"oversized", "PUT", "/v1/groups/x", `{"join_token":"` + strings.Repeat("a", 5000) + `"}`, 400, "invalid_json", "body", "at most 4096 bytes"},
		{"unknown field", "PUT", "/v1/groups/x", `{"frontdoor":"127.0.0.1:0"}`, 400, "invalid_json", "frontdoor", "not a known field"},
		{"unknown nested field", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","health":{"intervall":"1s"}}`, 400, "invalid_json", "health.intervall", "not a known field"},
		{"wrong type", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","health":{"rise":"two"}}`, 400, "invalid_json", "health.rise", "integer"},
		{"bad duration", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","report_interval":"fast"}`, 400, "invalid_json", "report_interval", "duration"},
		{"numeric duration", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","timeouts":{"connect":5}}`, 400, "invalid_json", "timeouts.connect", "duration"},
		{"bad replica", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","replicas":[{"address":"http://a:1"},{"address":"nope"}]}`, 400, "invalid_value", "replicas[1].address", "http://"},
		{"replica weight zero", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","replicas":[{"address":"http://a:1","weight":2},{"address":"http://a:2","weight":0}]}`, 400, "invalid_value", "replicas[1].weight", "leave weight out"},
		{"trailing brace", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0"}}`, 400, "invalid_json", "body", "single JSON object"},
		{"duplicate key", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","binding":"per-request","binding":"on-demand"}`, 400, "invalid_json", "binding", "duplicate key"},
		{"duplicate key in another case", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","join_token":"a","JOIN_TOKEN":"b"}`, 400, "invalid_json", "JOIN_TOKEN", "duplicate key"},
		{"duplicate nested key", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","health":{"rise":2,"fall":3,"rise":3}}`, 400, "invalid_json", "health.rise", "duplicate key"},
		{"duplicate replica key", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","replicas":[{"address":"http://a:1"},{"address":"http://a:2","address":"http://a:3"}]}`, 400, "invalid_json", "replicas[1].address", "duplicate key"},
		{"duplicate param", "PUT", "/v1/groups/x", `{"front_door":"127.0.0.1:0","params":{"dampening":0.5,"dampening":0.9}}`, 400, "invalid_json", "params.dampening", "duplicate key"},
		{"patch duplicate key", "PATCH", "/v1/groups/g", `{"binding":"per-request","binding":"on-demand"}`, 400, "invalid_json", "binding", "duplicate key"},
		{"name mismatch", "PUT", "/v1/groups/x", `{"name":"y","front_door":"127.0.0.1:0"}`, 400, "invalid_value", "name", "path"},
		{"bad name", "PUT", "/v1/groups/Bad_Name", group(nil), 400, "invalid_value", "name", "[a-z0-9-]+"},
		{"no front door", "PUT", "/v1/groups/x", `{}`, 400, "invalid_value", "front_door", "host:port"},
		{"bad binding", "PUT", "/v1/groups/x", group(map[string]any{"binding": "sometimes"}), 400, "invalid_value", "binding", "per-session, on-demand, per-request"},
		{"unknown strategy", "PUT", "/v1/groups/x", group(map[string]any{"strategy": "fastest"}), 400, "invalid_value", "strategy", "least-loaded"},
		{"param out of range", "PUT", "/v1/groups/x", group(map[string]any{"params": map[string]any{"dampening": 1.5}}), 400, "invalid_value", "params.dampening", "[0,1)"},
		{"unknown param", "PUT", "/v1/groups/x", group(map[string]any{"params": map[string]any{"damping": 0.5}}), 400, "invalid_value", "params.damping", "least-loaded"},
		{"interval out of range", "PUT", "/v1/groups/x", group(map[string]any{"report_interval": "1ms"}), 400, "invalid_value", "report_interval", "[10ms, 1h0m0s]"},
		{"patch param out of range", "PATCH", "/v1/groups/g", `{"params":{"tolerance":0.5}}`, 400, "invalid_value", "params.tolerance", "[1,10]"},
		{"patch unknown strategy", "PATCH", "/v1/groups/g", `{"strategy":"fastest"}`, 400, "invalid_value", "strategy", "round-robin"},
		{"patch bad binding", "PATCH", "/v1/groups/g", `{"binding":"never"}`, 400, "invalid_value", "binding", "per-request"},
		{"patch other setting", "PATCH", "/v1/groups/g", `{"front_door":"127.0.0.1:0"}`, 400, "invalid_json", "front_door", "only strategy, params, binding, max_inflight and queue"},
		{"patch malformed", "PATCH", "/v1/groups/g", `{"params":`, 400, "invalid_json", "body", "valid JSON"},
		{"patch wrong type", "PATCH", "/v1/groups/g", `{"params":[1]}`, 400, "invalid_json", "params", "object"},
		{"patch unknown group", "PATCH", "/v1/groups/nope", `{"binding":"per-request"}`, 404, "unknown_group", "", ""},
		{"replica tls unreadable ca", "PUT", "/v1/groups/x", group(map[string]any{"replica_tls": map[string]any{"ca": "/nonexistent/ca.pem"}}), 400, "invalid_value", "replica_tls.ca", "readable PEM certificate file"},
		{"replica tls cert without key", "PUT", "/v1/groups/x", group(map[string]any{"replica_tls": map[string]any{"cert": "/etc/c.pem"}}), 400, "invalid_value", "replica_tls.key", "must be set when replica_tls.cert is"},
		{"bad size", "PUT", "/v1/groups/x", group(map[string]any{"binding": "replicated", "replicated": map[string]any{"max_payload": "1 MeB"}}), 400, "invalid_json", "replicated.max_payload", `must be a size in bytes such as 1048576 or "1MiB"`},
		{"replicated block on per-request", "PUT", "/v1/groups/x", group(map[string]any{"binding": "per-request", "replicated": map[string]any{"max_payload": 1024}}), 400, "invalid_value", "replicated", "only allowed with binding replicated"},
		{"bad read-only route", "PUT", "/v1/groups/x", group(map[string]any{"binding": "replicated", "replicated": map[string]any{"read_only": []string{"GET /a", "/b"}}}), 400, "invalid_value", "replicated.read_only[1]", "a method is required"},
		{"replica tls unknown field", "PUT", "/v1/groups/x", group(map[string]any{"replica_tls": map[string]any{"cacert": "/etc/ca.pem"}}), 400, "invalid_json", "replica_tls.cacert", "not a known field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := wantError(t, e.call(tc.method, tc.path, "", tc.body), tc.status, tc.code, tc.field)
			if !strings.Contains(got.Allowed, tc.allowed) {
				t.Errorf("allowed %q does not mention %q (message %q)", got.Allowed, tc.allowed, got.Message)
			}
		})
	}
	// Nothing of the above changed group g or created x.
	wantError(t, e.call("GET", "/v1/groups/x", "", nil), http.StatusNotFound, "unknown_group", "")
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	a := e.call("POST", "/v1/groups/g", "", `{}`)
	wantError(t, a, http.StatusMethodNotAllowed, "method_not_allowed", "")
	if allow := a.header.Get("Allow"); allow != "DELETE, GET, HEAD, PATCH, PUT" {
		t.Errorf("Allow %q", allow)
	}
	wantError(t, e.call("GET", "/v1/report", "", nil), http.StatusMethodNotAllowed, "method_not_allowed", "")
	wantError(t, e.call("GET", "/v1/nothing", "", nil), http.StatusNotFound, "not_found", "")
	wantError(t, e.call("GET", "/v1/groups/g/replicas/r/nothing", "", nil), http.StatusNotFound, "not_found", "")
}
