package boltstore

import (
	"errors"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// TestWatchHistoryStartsAtOpen: bbolt keeps no history on disk, so the
// revisions committed before Open are compacted.
func TestWatchHistoryStartsAtOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openT(t, dir)
	put(t, s, "g/a", "1")
	rev := put(t, s, "g/a", "2")
	s.Close()
	s = openT(t, dir)
	if _, err := s.Watch(ctxT(t), "g/", rev); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("Watch from %d, committed before Open = %v; want ErrCompacted", rev, err)
	}
	ch, err := s.Watch(ctxT(t), "g/", rev+1)
	if err != nil {
		t.Fatal(err)
	}
	next := put(t, s, "g/a", "3")
	select {
	case r := <-ch:
		if r.Rev != next || len(r.Events) != 1 || string(r.Events[0].KV.Value) != "3" {
			t.Fatalf("watch response %+v, want the put of 3 at %d", r, next)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch response")
	}
}

// TestWatcherFallsBehind: a watcher that reads nothing while more than the
// kept history is committed gets ErrCompacted, then its channel closes.
func TestWatcherFallsBehind(t *testing.T) {
	t.Parallel()
	s, err := open(t.TempDir(), openTimeout, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	first := put(t, s, "g/a", "0")
	ch, err := s.Watch(ctxT(t), "g/", first)
	if err != nil {
		t.Fatal(err)
	}
	// The watcher's goroutine blocks sending the first revision; the
	// history moves on past it meanwhile.
	for i := range 8 {
		put(t, s, "g/a", string(rune('1'+i)))
	}
	var got []store.WatchResponse
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r, ok := <-ch:
			if !ok {
				last := got[len(got)-1]
				if !errors.Is(last.Err, store.ErrCompacted) {
					t.Fatalf("last response %+v, want ErrCompacted", last)
				}
				for _, r := range got[:len(got)-1] {
					if r.Err != nil || len(r.Events) != 1 {
						t.Fatalf("response before the error: %+v", r)
					}
				}
				return
			}
			got = append(got, r)
		case <-timeout:
			t.Fatalf("watch still open after %d responses", len(got))
		}
	}
}
