package groupstore

import (
	"context"
	"errors"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestAffinityEntriesGoWithTheirGroup: the session entries under a
// group's affinity prefix (an object key escaped, so that it holds no
// "/") are deleted with the group, and another group's stay; Load passes
// over them.
func TestAffinityEntriesGoWithTheirGroup(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New(st)
	for _, g := range []string{"objects", "objects2"} {
		if err := r.PutGroup(protocol.Group{Name: g}); err != nil {
			t.Fatal(err)
		}
	}
	if k := AffinityKey("objects", 1, "/carts/7 f"); k != "affinity/objects/1/%2Fcarts%2F7%20f" {
		t.Errorf("AffinityKey = %q", k)
	}
	ctx := context.Background()
	keys := []string{AffinityKey("objects", 0, "a"), AffinityKey("objects", 1, "/carts/7"), AffinityKey("objects2", 0, "a")}
	for _, k := range keys {
		if _, _, _, err := st.Txn(ctx, nil, []store.Op{store.Put(k, []byte(`{"replica":"r-1","timeout_ms":1000}`))}); err != nil {
			t.Fatal(err)
		}
	}
	if snap, err := r.Load(); err != nil || len(snap.Groups) != 2 {
		t.Fatalf("Load with session entries: %d groups, %v", len(snap.Groups), err)
	}
	if err := r.DeleteGroup("objects"); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		_, err := st.Get(ctx, k)
		if gone := errors.Is(err, store.ErrNotFound); gone != (i < 2) {
			t.Errorf("%s after deleting group objects: %v", k, err)
		}
	}
}
