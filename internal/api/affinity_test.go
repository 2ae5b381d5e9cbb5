package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// TestPutGroupAffinityBad: overlapping or unparsable affinity rules get
// 400 naming the rule's field; rules on an on-demand group too.
func TestPutGroupAffinityBad(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	overlap := []map[string]any{
		{"kind": "singleton", "match": "/objects/{name}/{rest...}"},
		{"kind": "client-activated", "match": "/objects/{id}/{more...}"},
	}
	a := e.call("PUT", "/v1/groups/g", "", group(map[string]any{"binding": "per-request", "affinity": overlap}))
	if got := wantError(t, a, http.StatusBadRequest, "invalid_value", "affinity[1].match"); !strings.Contains(got.Message, "affinity[0].match") {
		t.Errorf("message %q does not name the other rule", got.Message)
	}
	a = e.call("PUT", "/v1/groups/g", "", group(map[string]any{"binding": "per-request", "affinity": []map[string]any{{"kind": "singleton", "match": "/a/{x"}}}))
	wantError(t, a, http.StatusBadRequest, "invalid_value", "affinity[0].match")
	a = e.call("PUT", "/v1/groups/g", "", group(map[string]any{"affinity": []map[string]any{{"kind": "singleton", "match": "/a"}}}))
	wantError(t, a, http.StatusBadRequest, "invalid_value", "affinity")
	a = e.call("PUT", "/v1/groups/g", "", group(map[string]any{"binding": "per-request", "affinity": []map[string]any{{"kind": "singleton", "match": "/a/{x}"}}}))
	want(t, a, http.StatusCreated)
}
