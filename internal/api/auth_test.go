package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
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
	// A join token may deregister the replicas it registered, and only
	// those (TestJoinTokenRemovesOnlyItsOwn).
	var r registered
	a := e.call("POST", "/v1/groups/g/replicas", "g-join", `{"address":"http://127.0.0.1:9002"}`)
	want(t, a, http.StatusCreated)
	a.decode(t, &r)
	want(t, e.call("DELETE", "/v1/groups/g/replicas/"+r.ID, "g-join", nil), http.StatusAccepted)
}

// TestJoinTokenRemovesOnlyItsOwn: a join token may remove the replicas it
// registered, and no others: not those registered with the admin token or
// another join token, nor static ones, in its group or any other. Before,
// the global join token could remove any replica of any group. Nor may it
// take over another join token's registration with "replace", which would
// hand it that replica's token.
func TestJoinTokenRemovesOnlyItsOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{JoinToken: "global-join"})
	e.mustGroup("g", map[string]any{"join_token": "g-join", "replicas": []map[string]any{{"address": "http://127.0.0.1:9100"}}})
	e.mustGroup("h", nil)
	join := func(group, token, address string) registered {
		t.Helper()
		a := e.call("POST", "/v1/groups/"+group+"/replicas", token, map[string]any{"address": address})
		want(t, a, http.StatusCreated)
		var r registered
		a.decode(t, &r)
		return r
	}
	byAdmin := e.mustRegister("g", "http://127.0.0.1:9001")
	byGroupJoin := join("g", "g-join", "http://127.0.0.1:9002")
	byGlobalJoin := join("g", "global-join", "http://127.0.0.1:9003")
	inOtherGroup := e.mustRegister("h", "http://127.0.0.1:9004")
	var static string
	var st protocol.GroupStatus
	e.call("GET", "/v1/groups/g", adminToken, nil).decode(t, &st)
	for _, rs := range st.Replicas {
		if rs.Static {
			static = rs.ID
		}
	}
	if static == "" {
		t.Fatalf("no static replica in %+v", st.Replicas)
	}

	for _, tc := range []struct{ group, id, token string }{
		{"g", byAdmin.ID, "global-join"},
		{"g", byAdmin.ID, "g-join"},
		{"g", byGroupJoin.ID, "global-join"},
		{"g", byGlobalJoin.ID, "g-join"},
		{"g", static, "global-join"},
		{"h", inOtherGroup.ID, "global-join"},
		{"h", inOtherGroup.ID, "g-join"},
	} {
		a := e.call("DELETE", "/v1/groups/"+tc.group+"/replicas/"+tc.id, tc.token, nil)
		if got := wantError(t, a, http.StatusUnauthorized, "unauthorized", ""); !strings.Contains(got.Message, "the join token that registered it") {
			t.Errorf("DELETE %s/%s with %s: message %q does not say which join token may", tc.group, tc.id, tc.token, got.Message)
		}
	}
	// Replacing another join token's registration would hand over the
	// replica's token: refused as well.
	for _, tc := range []struct{ address, token string }{
		{"http://127.0.0.1:9002", "global-join"}, {"http://127.0.0.1:9003", "g-join"},
	} {
		a := e.call("POST", "/v1/groups/g/replicas", tc.token, map[string]any{"address": tc.address, "replace": true})
		if got := wantError(t, a, http.StatusUnauthorized, "unauthorized", ""); !strings.Contains(got.Message, "another join token") {
			t.Errorf("replace of %s with %s: message %q", tc.address, tc.token, got.Message)
		}
	}
	for _, id := range []string{byAdmin.ID, byGroupJoin.ID, byGlobalJoin.ID, static} {
		if st := e.replicaState("g", id); st != "active" {
			t.Errorf("replica %s is %q after refused removals, want active", id, st)
		}
	}

	// Its own: replace (a monitor restarting), then remove.
	a := e.call("POST", "/v1/groups/g/replicas", "g-join", map[string]any{"address": "http://127.0.0.1:9002", "replace": true})
	want(t, a, http.StatusOK)
	want(t, e.call("DELETE", "/v1/groups/g/replicas/"+byGroupJoin.ID, "g-join", nil), http.StatusAccepted)
	want(t, e.call("DELETE", "/v1/groups/g/replicas/"+byGlobalJoin.ID, "global-join", nil), http.StatusAccepted)
	// The admin token removes anything.
	want(t, e.call("DELETE", "/v1/groups/h/replicas/"+inOtherGroup.ID, adminToken, nil), http.StatusAccepted)
	// An admin's replace takes a joined replica over: its join token no
	// longer removes it.
	again := join("h", "global-join", "http://127.0.0.1:9005")
	want(t, e.call("POST", "/v1/groups/h/replicas", adminToken, map[string]any{"address": "http://127.0.0.1:9005", "replace": true}), http.StatusOK)
	wantError(t, e.call("DELETE", "/v1/groups/h/replicas/"+again.ID, "global-join", nil), http.StatusUnauthorized, "unauthorized", "")
	// A replace is a registration: the monitor of a static replica (or of
	// one added with the admin token) replaces it with its join token to
	// get a token, and the replica is then that join token's.
	want(t, e.call("POST", "/v1/groups/g/replicas", "g-join", map[string]any{"address": "http://127.0.0.1:9100", "replace": true}), http.StatusOK)
	want(t, e.call("DELETE", "/v1/groups/g/replicas/"+static, "g-join", nil), http.StatusAccepted)
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
