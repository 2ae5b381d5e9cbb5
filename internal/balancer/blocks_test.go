package balancer_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestBlockRefusesRegistration: a replica removed with its address
// blocked cannot register again (replace or not, in any spelling of the
// address) until the block is lifted; the block is in the status and
// survives a restart; lifting an address that is not blocked is
// ErrUnknownBlock.
func TestBlockRefusesRegistration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "g"})
	r := e.mustRegister("g", "http://127.0.0.1:9001")

	addr, err := e.b.RemoveReplicaBlocking("g", r.ID)
	if err != nil || addr != "http://127.0.0.1:9001" {
		t.Fatalf("RemoveReplicaBlocking = %q, %v", addr, err)
	}
	if st := replicaOf(t, e.mustGroup("g"), r.ID); st.State != protocol.StateDraining {
		t.Errorf("removed replica is %s, want draining", st.State)
	}
	for _, reg := range []protocol.Registration{
		{Address: "http://127.0.0.1:9001", Replace: true},
		{Address: "HTTP://127.0.0.1:9001/"},
	} {
		_, _, err := e.b.Register("g", reg)
		var be *balancer.BlockedError
		if !errors.As(err, &be) || be.Group != "g" || !strings.Contains(err.Error(), "fulcrum ctl unblock g "+reg.Address) {
			t.Errorf("Register(%+v) = %v, want a BlockedError saying how to unblock", reg, err)
		}
	}
	if got := e.mustGroup("g").Blocked; !slices.Equal(got, []string{"http://127.0.0.1:9001"}) {
		t.Errorf("status blocked = %v", got)
	}
	// Another address registers as before.
	e.mustRegister("g", "http://127.0.0.1:9002")

	// The block survives a restart.
	e2 := e.reopen(envOptions{})
	if _, _, err := e2.b.Register("g", protocol.Registration{Address: "http://127.0.0.1:9001"}); err == nil {
		t.Fatalf("registered a blocked address after a restart")
	}
	if created, err := e2.b.Block("g", "http://127.0.0.1:9001/"); err != nil || created {
		t.Errorf("blocking again = %v, %v; want false (already blocked), nil", created, err)
	}
	if err := e2.b.Unblock("g", "http://127.0.0.1:9001/"); err != nil {
		t.Fatalf("Unblock: %v", err)
	}
	if err := e2.b.Unblock("g", "http://127.0.0.1:9001"); !errors.Is(err, balancer.ErrUnknownBlock) {
		t.Errorf("Unblock twice = %v, want ErrUnknownBlock", err)
	}
	if len(e2.mustGroup("g").Blocked) != 0 {
		t.Errorf("still blocked: %v", e2.mustGroup("g").Blocked)
	}
	e2.mustRegisterWith("g", protocol.Registration{Address: "http://127.0.0.1:9001", Replace: true})

	// A bad address is refused naming the field; a deleted group takes its
	// blocks along.
	var fe *protocol.FieldError
	if _, err := e2.b.Block("g", "localhost:9001"); !errors.As(err, &fe) || fe.Field != "address" {
		t.Errorf("Block of a bad address = %v, want a FieldError on address", err)
	}
	if _, err := e2.b.Block("g", "http://127.0.0.1:9003"); err != nil {
		t.Fatal(err)
	}
	if err := e2.b.DeleteGroup("g"); err != nil {
		t.Fatal(err)
	}
	e2.mustPutGroup(protocol.Group{Name: "g"})
	e3 := e2.reopen(envOptions{})
	if got := e3.mustGroup("g").Blocked; len(got) != 0 {
		t.Errorf("a recreated group inherited blocks %v", got)
	}
}
