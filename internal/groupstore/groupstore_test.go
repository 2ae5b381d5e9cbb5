package groupstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func validGroup() protocol.Group {
	return protocol.Group{Name: "prime", FrontDoor: "127.0.0.1:8000", Strategy: "least-loaded",
		Replicas: []protocol.StaticReplica{{Address: "http://127.0.0.1:9001"}}}
}

func TestPersistsGroupsAndReplicas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := boltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := New(st)
	g := registry.WithDefaults(validGroup())
	if err := r.PutGroup(g); err != nil {
		t.Fatal(err)
	}
	other := registry.WithDefaults(protocol.Group{Name: "other", FrontDoor: "127.0.0.1:8001"})
	if err := r.PutGroup(other); err != nil {
		t.Fatal(err)
	}
	_, hash := registry.NewToken()
	rep := protocol.Replica{ID: "r-1", Group: "prime", Address: "http://127.0.0.1:9001", Weight: 2, TokenHash: hash, Created: time.Unix(0, 0).UTC()}
	if err := r.PutReplica(rep); err != nil {
		t.Fatal(err)
	}
	if err := r.PutReplica(protocol.Replica{ID: "r-2", Group: "other", Address: "http://127.0.0.1:9002", Weight: 1}); err != nil {
		t.Fatal(err)
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
	if len(snap.Groups) != 2 || len(snap.Replicas) != 2 {
		t.Fatalf("after reopening: %d groups, %d replicas; want 2 and 2", len(snap.Groups), len(snap.Replicas))
	}
	if snap.Rev != 4 {
		t.Errorf("snapshot revision %d, want 4 (four puts)", snap.Rev)
	}
	got, err := r.GetGroup("prime")
	if err != nil || got.FrontDoor != g.FrontDoor || got.Strategy != g.Strategy {
		t.Fatalf("GetGroup = %+v, %v", got, err)
	}
	if _, err := r.GetGroup("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetGroup of a missing group = %v, want ErrNotFound", err)
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

// TestKeys pins the layout the package doc promises.
func TestKeys(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New(st)
	if err := r.PutGroup(protocol.Group{Name: "prime"}); err != nil {
		t.Fatal(err)
	}
	if err := r.PutReplica(protocol.Replica{ID: "r-1", Group: "prime", TokenHash: "ab"}); err != nil {
		t.Fatal(err)
	}
	for key, field := range map[string]string{"groups/prime": "name", "replicas/prime/r-1": "token_hash"} {
		kv, err := st.Get(context.Background(), key)
		if err != nil {
			t.Fatalf("key %s: %v", key, err)
		}
		var m map[string]any
		if err := json.Unmarshal(kv.Value, &m); err != nil || m[field] == nil {
			t.Fatalf("key %s = %s, %v; want JSON with %q", key, kv.Value, err, field)
		}
	}
}

// TestDeleteGroupInBatches deletes a group of more replicas than one
// transaction may delete, and only its replicas.
func TestDeleteGroupInBatches(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New(st)
	n := store.MaxTxnOps + 7
	for _, g := range []string{"big", "bigger", "other"} {
		if err := r.PutGroup(protocol.Group{Name: g}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if err := r.PutReplica(protocol.Replica{ID: fmt.Sprintf("r-%04d", i), Group: "big"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"bigger", "other"} {
		if err := r.PutReplica(protocol.Replica{ID: "r-1", Group: g}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.DeleteGroup("big"); err != nil {
		t.Fatalf("DeleteGroup of %d replicas: %v", n, err)
	}
	snap, err := r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Groups) != 2 || len(snap.Replicas) != 2 {
		t.Fatalf("after deleting big: %d groups, %d replicas; want bigger and other with one each", len(snap.Groups), len(snap.Replicas))
	}
	for _, rep := range snap.Replicas {
		if rep.Group == "big" {
			t.Fatalf("replica %s of big survived", rep.ID)
		}
	}
}

// TestMigratesOldDataDir opens a data directory as the fulcrum before the
// schema key wrote it (one bbolt bucket per kind of record, registry.go of
// that version) and finds its groups, replicas and token hashes.
func TestMigratesOldDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := registry.WithDefaults(validGroup())
	g.Source = protocol.SourceAPI
	g.JoinToken = "join-secret"
	token, hash := registry.NewToken()
	reps := []protocol.Replica{
		{ID: "r-0a1b2c3d4e", Group: "prime", Address: "http://127.0.0.1:9001", Weight: 2, TokenHash: hash, Created: time.Unix(1700000000, 0).UTC(),
			Monitor: protocol.MonitorSpec{Mode: protocol.MonitorPull, URL: "http://127.0.0.1:9101/load"}},
		{ID: "r-ffffffffff", Group: "prime", Address: "http://127.0.0.1:9002", Weight: 1, Draining: true, Removing: true, Static: true, TokenHash: "00"},
	}
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		gb, err := tx.CreateBucket([]byte("groups"))
		if err != nil {
			return err
		}
		data, _ := json.Marshal(g)
		if err := gb.Put([]byte(g.Name), data); err != nil {
			return err
		}
		rb, err := tx.CreateBucket([]byte("replicas"))
		if err != nil {
			return err
		}
		for _, rep := range reps {
			data, _ := json.Marshal(rep)
			if err := rb.Put([]byte(rep.Group+"/"+rep.ID), data); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	st, err := boltstore.Open(dir)
	if err != nil {
		t.Fatalf("Open of an old data directory: %v", err)
	}
	defer st.Close()
	snap, err := New(st).Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Groups) != 1 || len(snap.Replicas) != 2 {
		t.Fatalf("after migration: %d groups, %d replicas; want 1 and 2", len(snap.Groups), len(snap.Replicas))
	}
	want, _ := json.Marshal(g)
	if got, _ := json.Marshal(snap.Groups[0]); string(got) != string(want) {
		t.Errorf("group after migration:\n%s\nwant\n%s", got, want)
	}
	for i, rep := range snap.Replicas {
		if rep != reps[i] {
			t.Errorf("replica %d after migration = %+v, want %+v", i, rep, reps[i])
		}
	}
	if !registry.TokenMatches(token, snap.Replicas[0].TokenHash) {
		t.Error("the replica's token no longer matches its stored hash")
	}
	if got, err := New(st).GetGroup("prime"); err != nil || got.JoinToken != "join-secret" {
		t.Errorf("GetGroup after migration = %+v, %v", got, err)
	}
}
