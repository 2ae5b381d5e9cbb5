package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// POST /v1/cluster/bound on a single node: admin token required, bad
// bodies 400 naming the field, an unknown group 404, and a valid notice
// 409 not_leader (a single node takes none).
func TestBoundNoticeSingleNode(t *testing.T) {
	e := newEnv(t, api.Options{AdminToken: "adm"}, balancer.Options{})
	e.mustGroup("prime", nil)
	notice := map[string]any{"group": "prime", "term": 3, "moves": []any{map[string]any{"client": "c1", "replica": "r-1"}}}
	wantError(t, e.call("POST", balancer.BoundPath, "", notice), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("POST", balancer.BoundPath, "adm", map[string]any{"group": "prime", "term": 3, "moves": []any{map[string]any{"client": "c1"}}}),
		http.StatusBadRequest, "invalid_value", "moves[0].replica")
	wantError(t, e.call("POST", balancer.BoundPath, "adm", map[string]any{"group": "prime", "term": "3", "moves": []any{}}),
		http.StatusBadRequest, "invalid_json", "term")
	wantError(t, e.call("POST", balancer.BoundPath, "adm", map[string]any{"group": "other", "term": 3, "moves": notice["moves"]}),
		http.StatusNotFound, "unknown_group", "")
	er := wantError(t, e.call("POST", balancer.BoundPath, "adm", notice), http.StatusConflict, "not_leader", "")
	if !strings.Contains(er.Message, "single node") {
		t.Errorf("409 message %q, want it to say the group is on a single node", er.Message)
	}
}
