package registry

import (
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestRegistryPersistsGroupsAndReplicas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := New(st)
	g := WithDefaults(validGroup())
	if err := r.PutGroup(g); err != nil {
		t.Fatal(err)
	}
	other := WithDefaults(protocol.Group{Name: "other", FrontDoor: "127.0.0.1:8001"})
	if err := r.PutGroup(other); err != nil {
		t.Fatal(err)
	}
	_, hash := NewToken()
	rep := protocol.Replica{ID: "r-1", Group: "prime", Address: "http://127.0.0.1:9001", Weight: 2, TokenHash: hash, Created: time.Unix(0, 0).UTC()}
	if err := r.PutReplica(rep); err != nil {
		t.Fatal(err)
	}
	if err := r.PutReplica(protocol.Replica{ID: "r-2", Group: "other", Address: "http://127.0.0.1:9002", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st, err = store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r = New(st)
	snap, err := r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Groups) != 2 || len(snap.Replicas) != 2 {
		t.Fatalf("after reopening: %d groups, %d replicas; want 2 and 2", len(snap.Groups), len(snap.Replicas))
	}
	got, err := r.GetGroup("prime")
	if err != nil || got.FrontDoor != g.FrontDoor || got.Strategy != g.Strategy {
		t.Fatalf("GetGroup = %+v, %v", got, err)
	}
	if err := r.DeleteGroup("other"); err != nil {
		t.Fatal(err)
	}
	snap, _ = r.Load()
	if len(snap.Groups) != 1 || len(snap.Replicas) != 1 || snap.Replicas[0].ID != "r-1" || snap.Replicas[0].TokenHash != hash {
		t.Fatalf("after deleting group other: %+v", snap)
	}
	if err := r.DeleteReplica("prime", "r-1"); err != nil {
		t.Fatal(err)
	}
	snap, _ = r.Load()
	if len(snap.Replicas) != 0 {
		t.Fatalf("replica still stored: %+v", snap.Replicas)
	}
}
