package registry

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

func TestGroupIOR(t *testing.T) {
	t.Parallel()
	c, err := GroupCorbaloc("corbaloc:iiop:lb1.example:2809", "prime")
	if err != nil {
		t.Fatal(err)
	}
	also := []ior.Address{
		{Version: ior.V12, Host: "lb2.example", Port: 2809},
		{Version: ior.V12, Host: "lb1.example", Port: 2809}, // the group's own, again
		{Version: ior.V12, Host: "::1", Port: 2810},
	}
	ref, err := GroupIOR(c, "IDL:Prime:1.0", also)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ior.ParseStringified(ref.String())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ep := range back.Endpoints() {
		if string(ep.Profile.ObjectKey) != "prime" || ep.Address.Version != ior.V12 {
			t.Errorf("endpoint %+v: want key prime, IIOP 1.2", ep)
		}
		got = append(got, ep.Address.HostPort())
	}
	want := []string{"lb1.example:2809", "lb2.example:2809", "[::1]:2810"}
	if len(back.Profiles) != 1 || back.TypeID != "IDL:Prime:1.0" || len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("type %q, %d profiles, endpoints %v; want IDL:Prime:1.0, one profile, %v", back.TypeID, len(back.Profiles), got, want)
	}
}
