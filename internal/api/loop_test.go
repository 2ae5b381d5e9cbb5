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

// frontDoorPort is the port group name's front door is bound to.
func (e *env) frontDoorPort(name string) string {
	e.t.Helper()
	a := e.call("GET", "/v1/groups/"+name, e.admin, nil)
	want(e.t, a, http.StatusOK)
	var st struct {
		Advertise string `json:"advertise"`
		Reference *struct {
			Corbaloc string `json:"corbaloc"`
		} `json:"reference"`
	}
	a.decode(e.t, &st)
	addr := st.Advertise
	if st.Reference != nil {
		addr = st.Reference.Corbaloc
	}
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		e.t.Fatalf("group %s advertises %q", name, addr)
	}
	return strings.TrimRight(addr[i+1:], "/")
}

// TestReplicaLoopsRefused: a replica address that leads back into the
// balancer is refused, through the API, naming what listens there. Before,
// a per-request group registered on its own front door multiplied one
// call until descriptors ran out, and a replica at the admin address made
// the front door an unauthenticated admin API.
func TestReplicaLoopsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("prime", map[string]any{"binding": "per-request"})
	e.mustGroup("other", nil)
	e.mustGroup("objects", map[string]any{"protocol": "giop"})
	prime := e.frontDoorPort("prime")
	objects := e.frontDoorPort("objects")
	_, admin, err := net.SplitHostPort(strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, group, address, target string
	}{
		{"own front door", "prime", "http://127.0.0.1:" + prime, `front door of group "prime"`},
		{"own front door as localhost", "prime", "http://localhost:" + prime + "/api", `front door of group "prime"`},
		{"own front door as a wildcard", "prime", "http://0.0.0.0:" + prime, `front door of group "prime"`},
		{"another group's front door", "other", "http://127.0.0.1:" + prime, `front door of group "prime"`},
		{"a GIOP front door", "other", "http://127.0.0.1:" + objects, `front door of group "objects"`},
		{"the admin API", "prime", "http://127.0.0.1:" + admin, "admin API"},
		{"the admin API by a loopback form", "other", "http://127.1:" + admin, "admin API"},
		{"corbaloc at its own front door", "objects", "corbaloc:iiop:1.2@127.0.0.1:" + objects + "/key", `front door of group "objects"`},
		{"corbaloc at the admin API", "objects", "corbaloc:iiop:1.2@localhost:" + admin + "/key", "admin API"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := e.call("POST", "/v1/groups/"+tc.group+"/replicas", "", map[string]any{"address": tc.address})
			got := wantError(t, a, http.StatusBadRequest, "invalid_value", "address")
			if !strings.Contains(got.Message, tc.address) || !strings.Contains(got.Message, tc.target+" of this balancer") || got.Allowed == "" {
				t.Errorf("error %+v does not name the address and %s", got, tc.target)
			}
		})
	}

	// Static replicas of a group body are held to the same.
	a := e.call("PUT", "/v1/groups/static", "", group(map[string]any{"replicas": []map[string]any{
		{"address": "http://127.0.0.1:9001"}, {"address": "http://127.0.0.1:" + admin},
	}}))
	if got := wantError(t, a, http.StatusBadRequest, "invalid_value", "replicas[1].address"); !strings.Contains(got.Message, "admin API") {
		t.Errorf("error %+v does not name the admin API", got)
	}
	wantError(t, e.call("GET", "/v1/groups/static", "", nil), http.StatusNotFound, "unknown_group", "")

	// Nothing was registered: the groups have no replicas, and a call to
	// prime's front door is answered at once, not looped.
	for _, name := range []string{"prime", "other", "objects"} {
		var st protocol.GroupStatus
		a := e.call("GET", "/v1/groups/"+name, "", nil)
		a.decode(t, &st)
		if len(st.Replicas) != 0 {
			t.Errorf("group %s has replicas %+v", name, st.Replicas)
		}
	}
	resp, err := http.Get("http://127.0.0.1:" + prime + "/v1/groups")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a call to the replica-less front door: %d, want 503", resp.StatusCode)
	}
}

// TestFrontDoorOntoReplicaRefused: a group's front door may not move to
// (or be created at) an address a registered replica points at: the
// replica would become the balancer itself. The group is refused; the
// replica stays.
func TestFrontDoorOntoReplicaRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	// A real replica, listening: the front door could not bind there
	// either, but the loop is what the answer names.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e.mustGroup("web", nil)
	r := e.mustRegister("web", "http://"+ln.Addr().String())
	for _, tc := range []struct{ method, name string }{{"PUT", "mover"}, {"PUT", "web"}} {
		a := e.call(tc.method, "/v1/groups/"+tc.name, "", group(map[string]any{"front_door": ln.Addr().String()}))
		got := wantError(t, a, http.StatusBadRequest, "invalid_value", "front_door")
		if !strings.Contains(got.Message, r.ID) || !strings.Contains(got.Message, `group "web"`) {
			t.Errorf("%s %s: error %+v does not name replica %s of group web", tc.method, tc.name, got, r.ID)
		}
	}
	if e.replicaState("web", r.ID) != "active" {
		t.Errorf("replica %s is no longer active", r.ID)
	}
	wantError(t, e.call("GET", "/v1/groups/mover", "", nil), http.StatusNotFound, "unknown_group", "")
}
