package etcdstore

import (
	"context"
	"testing"
)

// TestLowestNeeded: no watch, nothing needed; an open watch needs its
// start, then the revision after each change it delivered, then — the
// prefix quiet — etcd's revision after a change elsewhere, once a check's
// progress notification arrives; a closed watch needs nothing.
func TestLowestNeeded(t *testing.T) {
	s := openT(t, "")
	if low, ok := s.LowestNeeded(); ok {
		t.Fatalf("LowestNeeded with no watch = %d, true", low)
	}
	r1 := put(t, s, "g/a", "1")
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	ch, err := s.Watch(ctx, "g/", r1)
	if err != nil {
		t.Fatal(err)
	}
	if low, ok := s.LowestNeeded(); !ok || low > r1 {
		t.Fatalf("LowestNeeded of a watch from %d = %d, %v; want at most %d", r1, low, ok, r1)
	}
	if r := <-ch; r.Rev != r1 {
		t.Fatalf("first response %+v, want the put at %d", r, r1)
	}
	other := openT(t, "")
	elsewhere := put(t, other, "x", "1")
	waitFor(t, ctxT(t), "LowestNeeded past a change elsewhere", func() bool {
		low, ok := s.LowestNeeded()
		return ok && low >= elsewhere+1
	})
	cancel()
	for range ch { // closed once the watch has forgotten its revision
	}
	if low, ok := s.LowestNeeded(); ok {
		t.Fatalf("LowestNeeded after the watch ended = %d, true", low)
	}
}
