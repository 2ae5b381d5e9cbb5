package groupstore

import (
	"errors"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestGroupRevisions(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New(st)
	if rev, err := r.GroupRevision("prime"); err != nil || rev != 0 {
		t.Fatalf("absent group: revision %d, %v; want 0", rev, err)
	}
	// Created only when absent.
	if _, err := r.PutGroupAt(validGroup(), 7); !errors.Is(err, ErrConflict) {
		t.Fatalf("PutGroupAt an absent group at 7: %v, want ErrConflict", err)
	}
	rev1, err := r.PutGroupAt(validGroup(), 0)
	if err != nil || rev1 <= 0 {
		t.Fatalf("create: %d, %v", rev1, err)
	}
	if got, _ := r.GroupRevision("prime"); got != rev1 {
		t.Fatalf("GroupRevision %d, want %d", got, rev1)
	}
	// A replica's write leaves the group's revision alone.
	if err := r.PutReplica(protocol.Replica{Group: "prime", ID: "r-01", Address: "http://127.0.0.1:9002"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.GroupRevision("prime"); got != rev1 {
		t.Fatalf("GroupRevision %d after a replica's write, want %d", got, rev1)
	}
	g := validGroup()
	g.Binding = protocol.PerRequest
	rev2, err := r.PutGroupAt(g, rev1)
	if err != nil || rev2 <= rev1 {
		t.Fatalf("replace at %d: %d, %v", rev1, rev2, err)
	}
	// The old revision no longer matches; nothing is written.
	var ce *ConflictError
	if _, err := r.PutGroupAt(validGroup(), rev1); !errors.As(err, &ce) || ce.Current != rev2 || ce.Expected != rev1 {
		t.Fatalf("stale put: %v, want a ConflictError at %d", err, rev2)
	}
	if got, _ := r.GetGroup("prime"); got.Binding != protocol.PerRequest {
		t.Fatalf("a refused put changed the record: %+v", got)
	}
	snap, err := r.Load()
	if err != nil || snap.GroupRevs["prime"] != rev2 {
		t.Fatalf("Load: revisions %v, %v; want prime at %d", snap.GroupRevs, err, rev2)
	}
	if err := r.DeleteGroupAt("prime", rev1); !errors.As(err, &ce) || ce.Current != rev2 {
		t.Fatalf("stale delete: %v, want a ConflictError at %d", err, rev2)
	}
	if _, err := r.GetGroup("prime"); err != nil {
		t.Fatalf("a refused delete removed the group: %v", err)
	}
	if err := r.DeleteGroupAt("prime", rev2); err != nil {
		t.Fatal(err)
	}
	snap, err = r.Load()
	if err != nil || len(snap.Groups) != 0 || len(snap.Replicas) != 0 {
		t.Fatalf("after delete: %+v, %v", snap, err)
	}
}
