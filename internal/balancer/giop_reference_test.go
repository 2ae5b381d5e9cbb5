package balancer_test

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A GIOP group advertised at several addresses gets an IOR of one IIOP
// profile that lists the others as TAG_ALTERNATE_IIOP_ADDRESS components:
// omniORB reads only an IOR's first profile, so one profile per address
// would never fail over (docs/cluster.md).
func TestGIOPReferenceListsAdvertisedAddressesAsAlternates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	st := e.mustPutGroup(protocol.Group{
		Name: "multi", Protocol: protocol.ProtocolGIOP, Binding: protocol.PerRequest, FrontDoor: "127.0.0.1:0",
		Advertise: "corbaloc:iiop:1.2@lb1.example:2809,iiop:1.2@lb2.example:2810/multi",
	})
	ref, err := ior.Parse(st.Reference.IOR)
	if err != nil {
		t.Fatalf("group IOR %q: %v", st.Reference.IOR, err)
	}
	eps := ref.Endpoints()
	if len(ref.Profiles) != 1 || len(eps) != 2 {
		t.Fatalf("IOR has %d profiles and %d endpoints, want 1 profile listing 2", len(ref.Profiles), len(eps))
	}
	for i, want := range []string{"lb1.example:2809", "lb2.example:2810"} {
		if got := eps[i].Address.HostPort(); got != want || eps[i].ProfileIndex != 0 || eps[i].Alternate != (i > 0) {
			t.Errorf("endpoint %d: %s (profile %d, alternate %v), want %s in profile 0, alternate %v", i, got, eps[i].ProfileIndex, eps[i].Alternate, want, i > 0)
		}
	}
}
