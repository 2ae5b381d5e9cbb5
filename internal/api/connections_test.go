package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestConnectionsBadQuery holds ?limit= and ?after= to their ranges: each
// wrong value is a 400 invalid_value naming the parameter, quoting the
// value and saying what is allowed, even for an unknown group.
func TestConnectionsBadQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("g", nil)
	for _, tc := range []struct {
		name, query, field, value, allowed string
	}{
		{"limit zero", "limit=0", "limit", `"0"`, "[1, 10000]"},
		{"limit above the page", "limit=10001", "limit", `"10001"`, "[1, 10000]"},
		{"limit negative", "limit=-5", "limit", `"-5"`, "[1, 10000]"},
		{"limit not a number", "limit=ten", "limit", `"ten"`, "[1, 10000]"},
		{"limit empty", "limit=", "limit", `""`, "[1, 10000]"},
		{"limit twice", "limit=5&limit=6", "limit", `"5"`, "given once"},
		{"after negative", "after=-1", "after", `"-1"`, "decimal integer"},
		{"after not a number", "after=r1", "after", `"r1"`, "decimal integer"},
		{"after overflows", "after=18446744073709551616", "after", `"18446744073709551616"`, "18446744073709551615"},
		{"after twice", "after=1&after=2", "after", `"1"`, "given once"},
	} {
		for _, g := range []string{"g", "nope"} {
			a := e.call("GET", "/v1/groups/"+g+"/connections?"+tc.query, adminToken, nil)
			ae := wantError(t, a, http.StatusBadRequest, "invalid_value", tc.field)
			if !strings.Contains(ae.Message, tc.field+": invalid value "+tc.value) || !strings.Contains(ae.Allowed, tc.allowed) {
				t.Errorf("%s (group %s): %+v, want the value %s and %q allowed", tc.name, g, ae, tc.value, tc.allowed)
			}
		}
	}
}

// TestConnectionsRoute checks the route's other answers: 401 without the
// admin token, 404 for an unknown group, and an empty first page (no
// next) for a group whose front door proxies no connection.
func TestConnectionsRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("g", nil)
	wantError(t, e.call("GET", "/v1/groups/g/connections", "", nil), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("GET", "/v1/groups/g/connections", "wrong", nil), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("GET", "/v1/groups/nope/connections?limit=1&after=0", adminToken, nil), http.StatusNotFound, "unknown_group", "")
	for _, q := range []string{"", "?limit=1", "?limit=10000&after=18446744073709551615"} {
		a := e.call("GET", "/v1/groups/g/connections"+q, adminToken, nil)
		want(t, a, http.StatusOK)
		if !strings.Contains(string(a.body), `"connections":[]`) {
			t.Errorf("%s: %s, want an empty array of connections", q, a.body)
		}
		var list protocol.ConnectionList
		a.decode(t, &list)
		if len(list.Connections) != 0 || list.Next != 0 || list.Total != 0 {
			t.Errorf("%s: %+v, want an empty last page", q, list)
		}
	}
}
