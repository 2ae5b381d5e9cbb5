package api_test

import (
	"net/http"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

const adminToken = "s3cret-admin"

func TestAdminToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("g", nil)

	for _, path := range []string{"/v1/groups", "/v1/groups/g", "/metrics"} {
		wantError(t, e.call("GET", path, "", nil), http.StatusUnauthorized, "unauthorized", "")
		wantError(t, e.call("GET", path, "wrong", nil), http.StatusUnauthorized, "unauthorized", "")
		wantError(t, e.call("GET", path, adminToken+"x", nil), http.StatusUnauthorized, "unauthorized", "")
		want(t, e.call("GET", path, adminToken, nil), http.StatusOK)
	}
	wantError(t, e.call("PUT", "/v1/groups/h", "", group(nil)), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("PATCH", "/v1/groups/g", "", `{"binding":"per-request"}`), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("DELETE", "/v1/groups/g", "", nil), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("POST", "/v1/groups/g/replicas", "", `{"address":"http://127.0.0.1:9001"}`), http.StatusUnauthorized, "unauthorized", "")
	// The scheme is case-insensitive.
	want(t, e.call("GET", "/v1/groups", "", nil, "Authorization", "bearer "+adminToken), http.StatusOK)

	// Probes and the spec stay open.
	for _, path := range []string{"/healthz", "/readyz", "/v1/openapi.yaml"} {
		want(t, e.call("GET", path, "", nil), http.StatusOK)
	}
}

func TestJoinToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{JoinToken: "global-join"})
	e.mustGroup("g", map[string]any{"join_token": "g-join"})
	e.mustGroup("h", nil)

	// The group's join token registers in g only; the global one anywhere.
	want(t, e.call("POST", "/v1/groups/g/replicas", "g-join", `{"address":"http://127.0.0.1:9001"}`), http.StatusCreated)
	wantError(t, e.call("POST", "/v1/groups/h/replicas", "g-join", `{"address":"http://127.0.0.1:9001"}`), http.StatusUnauthorized, "unauthorized", "")
	want(t, e.call("POST", "/v1/groups/h/replicas", "global-join", `{"address":"http://127.0.0.1:9001"}`), http.StatusCreated)
	// A join token is not an admin token.
	wantError(t, e.call("GET", "/v1/groups/g", "g-join", nil), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("PATCH", "/v1/groups/g", "global-join", `{"binding":"per-request"}`), http.StatusUnauthorized, "unauthorized", "")
	// A join token may deregister.
	r := e.mustRegister("g", "http://127.0.0.1:9002")
	want(t, e.call("DELETE", "/v1/groups/g/replicas/"+r.ID, "g-join", nil), http.StatusAccepted)
}

func TestReplicaOwnToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("g", nil)
	r1 := e.mustRegister("g", "http://127.0.0.1:9001")
	r2 := e.mustRegister("g", "http://127.0.0.1:9002")

	// A replica token reports, drains and removes its own replica only.
	want(t, e.call("POST", "/v1/report", r1.Token, `{"load":1}`), http.StatusOK)
	wantError(t, e.call("POST", "/v1/report", adminToken, `{"load":1}`), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("POST", "/v1/groups/g/replicas/"+r2.ID+"/drain", r1.Token, nil), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("DELETE", "/v1/groups/g/replicas/"+r2.ID, r1.Token, nil), http.StatusUnauthorized, "unauthorized", "")
	want(t, e.call("POST", "/v1/groups/g/replicas/"+r1.ID+"/drain", r1.Token, nil), http.StatusOK)
	// Undoing an operator's drain takes the admin token.
	wantError(t, e.call("POST", "/v1/groups/g/replicas/"+r1.ID+"/activate", r1.Token, nil), http.StatusUnauthorized, "unauthorized", "")
	want(t, e.call("POST", "/v1/groups/g/replicas/"+r1.ID+"/activate", adminToken, nil), http.StatusOK)
	want(t, e.call("DELETE", "/v1/groups/g/replicas/"+r1.ID, r1.Token, nil), http.StatusAccepted)
	// Nor does it reach other routes.
	wantError(t, e.call("GET", "/v1/groups/g", r1.Token, nil), http.StatusUnauthorized, "unauthorized", "")
}
