package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// unreachableStore is a real store that says, while down is set, that it
// cannot be reached (store.Reachability), as the etcd store does.
type unreachableStore struct {
	store.Store
	down atomic.Bool
}

func (s *unreachableStore) Unreachable() error {
	if s.down.Load() {
		return fmt.Errorf("%w: etcd at http://192.0.2.1:2379 has not answered since 2026-11-27T08:00:00Z: context deadline exceeded", store.ErrUnavailable)
	}
	return nil
}

// TestStoreUnreachable: while the store cannot be reached, every change
// answers 503 store_unavailable naming etcd, with Retry-After, a status
// the OpenAPI file lists for the route; /readyz is 503 naming etcd and
// fulcrum_ready 0; GETs and reports are answered. Once the store is back,
// /readyz is 200 and changes work.
func TestStoreUnreachable(t *testing.T) {
	t.Parallel()
	bst, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bst.Close() })
	st := &unreachableStore{Store: bst}
	e := newEnv(t, api.Options{}, balancer.Options{Store: st})
	if a := e.call("PUT", "/v1/groups/g", "", map[string]any{"front_door": "127.0.0.1:0"}); a.status != http.StatusCreated {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	var reg protocol.Registered
	a := e.call("POST", "/v1/groups/g/replicas", "", map[string]any{"address": "http://127.0.0.1:9601"})
	a.decode(t, &reg)
	var spec struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(e.call("GET", "/v1/openapi.yaml", "", nil).body, &spec); err != nil {
		t.Fatal(err)
	}

	st.down.Store(true)
	for _, w := range []struct {
		method, path, route string
		body                any
	}{
		{"PUT", "/v1/groups/g", "/v1/groups/{name}", map[string]any{"front_door": "127.0.0.1:0", "strategy": "random"}},
		{"PATCH", "/v1/groups/g", "/v1/groups/{name}", map[string]any{"strategy": "random"}},
		{"DELETE", "/v1/groups/g", "/v1/groups/{name}", nil},
		{"POST", "/v1/groups/g/replicas", "/v1/groups/{name}/replicas", map[string]any{"address": "http://127.0.0.1:9602"}},
		{"DELETE", "/v1/groups/g/replicas/" + reg.ID, "/v1/groups/{name}/replicas/{id}", nil},
		{"POST", "/v1/groups/g/replicas/" + reg.ID + "/drain", "/v1/groups/{name}/replicas/{id}/drain", nil},
		{"POST", "/v1/groups/g/replicas/" + reg.ID + "/activate", "/v1/groups/{name}/replicas/{id}/activate", nil},
		{"POST", "/v1/groups/g/blocks", "/v1/groups/{name}/blocks", map[string]any{"address": "http://127.0.0.1:9603"}},
		{"DELETE", "/v1/groups/g/blocks?address=http://127.0.0.1:9603", "/v1/groups/{name}/blocks", nil},
	} {
		a := e.call(w.method, w.path, "", w.body)
		if a.status != http.StatusServiceUnavailable {
			t.Errorf("%s %s with the store unreachable: %d %s, want 503", w.method, w.path, a.status, a.body)
			continue
		}
		if got := a.err(t); got.Code != "store_unavailable" || !strings.Contains(got.Message, "etcd at http://192.0.2.1:2379") {
			t.Errorf("%s %s: %+v, want store_unavailable naming etcd and its endpoint", w.method, w.path, got)
		}
		if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("%s %s: Retry-After %q, want seconds", w.method, w.path, a.header.Get("Retry-After"))
		}
		op, _ := spec.Paths[w.route][strings.ToLower(w.method)].(map[string]any)
		responses, _ := op["responses"].(map[string]any)
		if _, ok := responses["503"]; !ok {
			t.Errorf("%s %s answers 503, which the OpenAPI file does not list", w.method, w.route)
		}
	}
	a = e.call("GET", "/readyz", "", nil)
	if a.status != http.StatusServiceUnavailable || a.err(t).Code != "not_ready" || !strings.Contains(a.err(t).Message, "etcd at http://192.0.2.1:2379") {
		t.Errorf("/readyz with the store unreachable: %d %s, want 503 not_ready naming etcd", a.status, a.body)
	}
	if m := e.call("GET", "/metrics", "", nil); !strings.Contains(string(m.body), "\nfulcrum_ready 0\n") {
		t.Errorf("fulcrum_ready is not 0 with the store unreachable")
	}
	var gs protocol.GroupStatus
	e.call("GET", "/v1/groups/g", "", nil).decode(t, &gs)
	if gs.Strategy == "random" || len(gs.Replicas) != 1 || gs.Replicas[0].State != protocol.StateActive {
		t.Errorf("group after refused changes: strategy %s, replicas %+v; want unchanged", gs.Strategy, gs.Replicas)
	}
	if a := e.call("POST", "/v1/report", reg.Token, map[string]any{"load": 0.5}); a.status != http.StatusOK {
		t.Errorf("report with the store unreachable: %d %s, want 200", a.status, a.body)
	}

	st.down.Store(false)
	if a := e.call("GET", "/readyz", "", nil); a.status != http.StatusOK {
		t.Errorf("/readyz with the store back: %d %s", a.status, a.body)
	}
	if a := e.call("POST", "/v1/groups/g/replicas/"+reg.ID+"/drain", "", nil); a.status != http.StatusOK {
		t.Errorf("drain with the store back: %d %s", a.status, a.body)
	}
}
