package groupstore

import (
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestPersistsBlocks: blocks survive a reopen, are lifted one by one, and
// go with their group.
func TestPersistsBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := boltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := New(st)
	for _, name := range []string{"prime", "other"} {
		if err := r.PutGroup(registry.WithDefaults(protocol.Group{Name: name, FrontDoor: "127.0.0.1:0"})); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Unix(100, 0).UTC()
	blocks := []Block{
		{Group: "prime", Address: "http://10.0.0.5:9001/", Match: "http://10.0.0.5:9001", Created: at},
		{Group: "prime", Address: "http://10.0.0.6:9001", Match: "http://10.0.0.6:9001", Created: at},
		{Group: "other", Address: "http://10.0.0.5:9001", Match: "http://10.0.0.5:9001", Created: at},
	}
	for _, b := range blocks {
		if err := r.PutBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	st, err = boltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r = New(st)
	snap, err := r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Blocks) != 3 {
		t.Fatalf("after reopening: %+v, want 3 blocks", snap.Blocks)
	}
	found := false
	for _, b := range snap.Blocks {
		if b == blocks[0] {
			found = true
		}
	}
	if !found {
		t.Errorf("block %+v not loaded as stored: %+v", blocks[0], snap.Blocks)
	}
	if err := r.DeleteBlock("prime", "http://10.0.0.6:9001"); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteGroup("other"); err != nil {
		t.Fatal(err)
	}
	snap, _ = r.Load()
	if len(snap.Blocks) != 1 || snap.Blocks[0] != blocks[0] {
		t.Errorf("after lifting one and deleting group other: %+v, want only %+v", snap.Blocks, blocks[0])
	}
}
