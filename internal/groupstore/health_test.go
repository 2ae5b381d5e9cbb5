package groupstore

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestHealthGoesWithItsReplica: health states load, and are deleted with
// their replica and with their group.
func TestHealthGoesWithItsReplica(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New(st)
	for _, name := range []string{"prime", "other"} {
		if err := r.PutGroup(registry.WithDefaults(protocol.Group{Name: name, FrontDoor: "127.0.0.1:0"})); err != nil {
			t.Fatal(err)
		}
	}
	hs := []Health{
		{Group: "prime", ID: "r-1", State: "down", Term: 7},
		{Group: "prime", ID: "r-2", State: "up", Term: 7},
		{Group: "other", ID: "r-3", State: "down", Term: 9},
	}
	for _, h := range hs {
		if err := r.PutReplica(protocol.Replica{Group: h.Group, ID: h.ID, Address: "http://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		if err := r.PutHealth(h); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Health) != 3 {
		t.Fatalf("loaded health %+v, want the 3 stored", snap.Health)
	}
	if err := r.DeleteReplica("prime", "r-1"); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteGroup("other"); err != nil {
		t.Fatal(err)
	}
	snap, err = r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Health) != 1 || snap.Health[0] != hs[1] {
		t.Fatalf("after deleting replica r-1 and group other: health %+v, want only %+v", snap.Health, hs[1])
	}
}
