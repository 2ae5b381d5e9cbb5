package api_test

import (
	"encoding/json"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func typedIOR(host string, port uint16, key string) string {
	return ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{ior.IIOPProfile{
		Order: cdr.BigEndian, Version: ior.V12, Host: host, Port: port, ObjectKey: []byte(key),
	}}}.String()
}

// TestGIOPGroupReference checks a GIOP group's reference in its status and
// in the registration answer, and that bad references are refused with a
// 400 naming the problem.
func TestGIOPGroupReference(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("primes", map[string]any{"protocol": "giop"})

	status := func() (protocol.GroupStatus, map[string]any) {
		a := e.call("GET", "/v1/groups/primes", "", nil)
		want(t, a, http.StatusOK)
		var st protocol.GroupStatus
		a.decode(t, &st)
		var raw map[string]any
		a.decode(t, &raw)
		return st, raw
	}
	st, _ := status()
	_, port, _ := net.SplitHostPort(st.Listening)
	wantLoc := "corbaloc:iiop:127.0.0.1:" + port + "/primes"
	if st.Reference == nil || st.Reference.Corbaloc != wantLoc {
		t.Fatalf("reference = %+v, want corbaloc %s", st.Reference, wantLoc)
	}
	ref, err := ior.Parse(st.Reference.IOR)
	if err != nil {
		t.Fatalf("reference.ior %q: %v", st.Reference.IOR, err)
	}
	p, _ := ref.IIOP()
	if ref.TypeID != "IDL:omg.org/CORBA/Object:1.0" || p.Address().HostPort() != "127.0.0.1:"+port || string(p.ObjectKey) != "primes" {
		t.Errorf("reference.ior of a group without replicas = %+v", ref)
	}

	// A typed replica gives the group's IOR its type; the registration
	// answer's front door is the group's corbaloc reference.
	r := e.mustRegister("primes", typedIOR("127.0.0.1", 1, "\x00omniPOA\x01"))
	if r.FrontDoor != wantLoc {
		t.Errorf("front_door = %q, want %q", r.FrontDoor, wantLoc)
	}
	st, _ = status()
	if ref, err = ior.Parse(st.Reference.IOR); err != nil || ref.TypeID != "IDL:Prime:1.0" {
		t.Errorf("reference.ior type = %q (%v), want IDL:Prime:1.0", ref.TypeID, err)
	}
	// The same object by corbaloc URL is a duplicate.
	a := e.call("POST", "/v1/groups/primes/replicas", "", map[string]any{"address": "corbaloc:iiop:1.2@127.0.0.1:1/%00omniPOA%01"})
	wantError(t, a, http.StatusConflict, "duplicate_address", "address")

	noKey := ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{ior.IIOPProfile{Version: ior.V12, Host: "h", Port: 7}}}.String()
	for _, bad := range []struct{ addr, want string }{
		{"http://127.0.0.1:9001", "IOR:"},
		{"IOR:00zz", "invalid byte"},
		{noKey, "object key"},
		{"corbaloc:iiop:127.0.0.1:7", "object key"},
	} {
		a := e.call("POST", "/v1/groups/primes/replicas", "", map[string]any{"address": bad.addr})
		got := wantError(t, a, http.StatusBadRequest, "invalid_value", "address")
		if !strings.Contains(got.Message+got.Allowed, bad.want) {
			t.Errorf("registering %q: %+v, want it to mention %q", bad.addr, got, bad.want)
		}
	}
	if !strings.Contains(e.call("POST", "/v1/groups/primes/replicas", "", map[string]any{"address": noKey}).err(t).Allowed, "IDL:Prime:1.0") {
		t.Error("the 400 for a reference without a key does not keep its repository id")
	}

	// HTTP groups have no reference.
	e.mustGroup("web", nil)
	a = e.call("GET", "/v1/groups/web", "", nil)
	var raw map[string]any
	a.decode(t, &raw)
	if _, ok := raw["reference"]; ok {
		t.Errorf("an http group has a reference: %v", raw["reference"])
	}
	if _, ok := raw["giop"]; ok {
		t.Errorf("an http group has giop settings: %v", raw["giop"])
	}
}

// TestGIOPStatusDocumented checks that every member of a GIOP group's
// status, and of its reference and giop settings, is documented in
// openapi.yaml.
func TestGIOPStatusDocumented(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("primes", map[string]any{"protocol": "giop", "giop": map[string]any{"locate": "here"}})
	var spec struct {
		Components struct {
			Schemas map[string]schema `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(e.call("GET", "/v1/openapi.yaml", "", nil).body, &spec); err != nil {
		t.Fatal(err)
	}
	props := map[string]schema{}
	for _, name := range []string{"GroupSettings", "GroupStatus"} {
		s := spec.Components.Schemas[name]
		for k, v := range s.Properties {
			props[k] = v
		}
		for _, part := range s.AllOf {
			for k, v := range part.Properties {
				props[k] = v
			}
		}
	}
	var st map[string]json.RawMessage
	e.call("GET", "/v1/groups/primes", "", nil).decode(t, &st)
	var missing []string
	for k := range st {
		if _, ok := props[k]; !ok {
			missing = append(missing, k)
		}
	}
	for _, nested := range []string{"reference", "giop"} {
		var m map[string]any
		if err := json.Unmarshal(st[nested], &m); err != nil || len(m) == 0 {
			t.Fatalf("status has no %s: %s", nested, st[nested])
		}
		for k := range m {
			if _, ok := props[nested].Properties[k]; !ok {
				missing = append(missing, nested+"."+k)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("status members not in openapi.yaml: %v", missing)
	}
}

type schema struct {
	Properties map[string]schema `yaml:"properties"`
	AllOf      []schema          `yaml:"allOf"`
}
