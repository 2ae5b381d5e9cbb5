package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// TestBlocks: DELETE of a replica with ?block=true (admin only) blocks its
// address, whose registration is then a 403 address_blocked saying how to
// lift it; POST and DELETE /blocks block and lift addresses.
func TestBlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("g", map[string]any{"join_token": "join"})
	const addr = "http://127.0.0.1:9001"
	a := e.call("POST", "/v1/groups/g/replicas", "join", map[string]any{"address": addr})
	want(t, a, http.StatusCreated)
	var r registered
	a.decode(t, &r)

	// A join token may remove its replica, but not block the address.
	wantError(t, e.call("DELETE", "/v1/groups/g/replicas/"+r.ID+"?block=true", "join", nil), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("DELETE", "/v1/groups/g/replicas/"+r.ID+"?block=maybe", adminToken, nil), http.StatusBadRequest, "invalid_value", "block")

	a = e.call("DELETE", "/v1/groups/g/replicas/"+r.ID+"?block=true", adminToken, nil)
	want(t, a, http.StatusAccepted)
	var rs struct{ Group, ID, State, Blocked string }
	a.decode(t, &rs)
	if rs.State != "draining" || rs.Blocked != addr {
		t.Errorf("remove with block answered %+v", rs)
	}
	e2 := wantError(t, e.call("POST", "/v1/groups/g/replicas", "join", map[string]any{"address": addr, "replace": true}), http.StatusForbidden, "address_blocked", "address")
	if !strings.Contains(e2.Message, "fulcrum ctl unblock g "+addr) || !strings.Contains(e2.Message, "blocked") {
		t.Errorf("message %q does not say how to lift the block", e2.Message)
	}
	var st struct{ Blocked []string }
	e.call("GET", "/v1/groups/g", adminToken, nil).decode(t, &st)
	if len(st.Blocked) != 1 || st.Blocked[0] != addr {
		t.Errorf("group status blocked = %v", st.Blocked)
	}

	// The block routes need the admin token.
	wantError(t, e.call("DELETE", "/v1/groups/g/blocks?address="+url.QueryEscape(addr), "join", nil), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("DELETE", "/v1/groups/g/blocks", adminToken, nil), http.StatusBadRequest, "invalid_value", "address")
	want(t, e.call("DELETE", "/v1/groups/g/blocks?address="+url.QueryEscape(addr+"/"), adminToken, nil), http.StatusOK)
	wantError(t, e.call("DELETE", "/v1/groups/g/blocks?address="+url.QueryEscape(addr), adminToken, nil), http.StatusNotFound, "unknown_block", "")
	// Registers again: 201, or 200 when the removed replica was not yet
	// idle and the replace took it over.
	if a := e.call("POST", "/v1/groups/g/replicas", "join", map[string]any{"address": addr, "replace": true}); a.status != http.StatusCreated && a.status != http.StatusOK {
		t.Fatalf("registration after unblocking: %d %s", a.status, a.body)
	}

	// POST /blocks blocks an address (201, then 200); a bad one is a 400.
	want(t, e.call("POST", "/v1/groups/g/blocks", adminToken, map[string]any{"address": "http://127.0.0.1:9002"}), http.StatusCreated)
	want(t, e.call("POST", "/v1/groups/g/blocks", adminToken, map[string]any{"address": "http://127.0.0.1:9002"}), http.StatusOK)
	wantError(t, e.call("POST", "/v1/groups/g/replicas", adminToken, map[string]any{"address": "http://127.0.0.1:9002"}), http.StatusForbidden, "address_blocked", "address")
	wantError(t, e.call("POST", "/v1/groups/g/blocks", adminToken, map[string]any{"address": "localhost:9002"}), http.StatusBadRequest, "invalid_value", "address")
	wantError(t, e.call("POST", "/v1/groups/nope/blocks", adminToken, map[string]any{"address": addr}), http.StatusNotFound, "unknown_group", "")
}
