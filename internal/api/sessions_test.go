package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestSessionsQuery: GET /v1/groups/{name}/sessions checks ?limit= and
// ?after= before the group (400 naming the parameter and what is
// allowed), answers 404 for an unknown group and an empty page for a
// group without affinity rules, and needs the admin token.
func TestSessionsQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("g", nil)
	var l protocol.SessionList
	a := e.call("GET", "/v1/groups/g/sessions", adminToken, nil)
	want(t, a, http.StatusOK)
	a.decode(t, &l)
	if l.Sessions == nil || len(l.Sessions) != 0 || l.Total != 0 || l.Next != "" {
		t.Errorf("sessions of a group without rules = %+v, want an empty page", l)
	}
	for _, tc := range []struct{ query, field, allowed string }{
		{"limit=0", "limit", "[1, 10000]"},
		{"limit=10001", "limit", "[1, 10000]"},
		{"limit=ten", "limit", "[1, 10000]"},
		{"limit=5&limit=6", "limit", "given once"},
		{"after=7", "after", "<rule>/<key>"},
		{"after=x%2Fk", "after", "<rule>/<key>"},
		{"after=-1%2Fk", "after", "non-negative"},
		{"after=0%2Fa&after=0%2Fb", "after", "given once"},
	} {
		for _, group := range []string{"g", "nope"} {
			ae := wantError(t, e.call("GET", "/v1/groups/"+group+"/sessions?"+tc.query, adminToken, nil), http.StatusBadRequest, "invalid_value", tc.field)
			if !strings.Contains(ae.Allowed, tc.allowed) {
				t.Errorf("%s on %s: allowed %q, want it to say %q", tc.query, group, ae.Allowed, tc.allowed)
			}
		}
	}
	want(t, e.call("GET", "/v1/groups/g/sessions?limit=10000&after=0%2F", adminToken, nil), http.StatusOK)
	wantError(t, e.call("GET", "/v1/groups/nope/sessions?limit=1", adminToken, nil), http.StatusNotFound, "unknown_group", "")
	wantError(t, e.call("GET", "/v1/groups/g/sessions", "", nil), http.StatusUnauthorized, "unauthorized", "")
}
