package boltlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openDB(t *testing.T, path string, o Options) *DB {
	t.Helper()
	db, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSweep: Sweep deletes the sessions idle for a TTL, with their dedup
// keys, and keeps those used since; a session's use renews it.
func TestSweep(t *testing.T) {
	c := clocktest.New(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	db := openDB(t, filepath.Join(t.TempDir(), FileName), Options{Clock: c, SweepEvery: -1})
	l, err := db.Group("g", GroupOptions{SessionTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"old", "kept"} {
		if _, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: s, Seq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(40 * time.Second)
	if _, existed, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "kept", Seq: 1}); err != nil || !existed {
		t.Fatalf("kept/1 again: %v %v", existed, err)
	}
	c.Advance(20 * time.Second) // old: idle 60s; kept: idle 20s
	p, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "stamp", Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range l.Watch(ctxT(t), p) {
		if err != nil || !e.Appended.Equal(c.Now()) {
			t.Fatalf("entry appended at %v (%v), want the clock's %v", e.Appended, err, c.Now())
		}
		break
	}
	n, err := l.Sweep(ctxT(t))
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 session", n, err)
	}
	err = db.db.View(func(tx *bolt.Tx) error {
		g := tx.Bucket(l.bucket)
		if g.Bucket(sessionsBucket).Get([]byte("old")) != nil || g.Bucket(dedupBucket).Get(dedupKey("old", 1)) != nil {
			t.Error("the expired session or its dedup key is still stored")
		}
		if g.Bucket(dedupBucket).Get(dedupKey("kept", 1)) == nil {
			t.Error("the live session's dedup key was swept")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, existed, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "kept", Seq: 1}); err != nil || !existed {
		t.Fatalf("kept/1 after the sweep: %v %v, want existed", existed, err)
	}
}

// TestOpenRefuses: bad options, a group opened twice, a file of another
// schema version, and a file locked by another DB are refused, saying
// what.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if _, err := Open(path, Options{MaxBatch: -1}); err == nil || !strings.Contains(err.Error(), "max batch -1") {
		t.Errorf("MaxBatch -1: %v", err)
	}
	db := openDB(t, path, Options{})
	if _, err := db.Group("", GroupOptions{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty group: %v", err)
	}
	if _, err := db.Group("g", GroupOptions{Limits: replog.Limits{MaxPayload: 10, MaxLogBytes: 9}}); err == nil || !strings.Contains(err.Error(), "max_log_bytes 9") {
		t.Errorf("limits: %v", err)
	}
	if _, err := db.Group("g", GroupOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Group("g", GroupOptions{}); err == nil || !strings.Contains(err.Error(), `"g": opened already`) {
		t.Errorf("second open of g: %v", err)
	}
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a file another DB holds: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put(schemaKey, []byte("9")) }); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), `version "9"`) {
		t.Errorf("schema 9: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// TestTrimBeyondLast: a trim past the last position is refused; appends
// after the DB closed get ErrClosed.
func TestTrimBeyondLast(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), FileName), Options{})
	l, err := db.Group("g", GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.Trim(ctxT(t), 2); err == nil || !strings.Contains(err.Error(), "beyond the last position 1") {
		t.Fatalf("Trim(2) of a log of 1: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 2}); !errors.Is(err, replog.ErrClosed) {
		t.Fatalf("append after the DB closed: %v, want ErrClosed", err)
	}
}

// TestGroupsApart: two groups in one file have their own dense positions,
// dedup keys, trim points and watches.
func TestGroupsApart(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), FileName), Options{})
	a, err := db.Group("a", GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Group("b", GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for _, l := range []*Log{a, b} {
			p, existed, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: uint64(i), Payload: []byte(l.name)})
			if err != nil || existed || p != uint64(i+1) {
				t.Fatalf("group %s, s/%d: %d %v %v, want new at %d", l.name, i, p, existed, err, i+1)
			}
		}
	}
	if err := a.Trim(ctxT(t), 2); err != nil {
		t.Fatal(err)
	}
	for e, err := range b.Watch(ctxT(t), 1) {
		if err != nil || e.Position != 1 || string(e.Payload) != "b" {
			t.Fatalf("b's first entry after a's trim: %+v %v", e, err)
		}
		break
	}
}
