package affinity

import (
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func caTable(t *testing.T, maxEntries int) *Table {
	t.Helper()
	rules, err := Compile("http", []protocol.AffinityRule{
		{Kind: protocol.AffinitySingleton, Match: "/s/{k}"},
		{Kind: protocol.AffinityClientActivated, Match: "/o/{id}", Timeout: protocol.Duration(10 * time.Second), MaxEntries: maxEntries},
	})
	if err != nil {
		t.Fatal(err)
	}
	return NewTable(rules)
}

func TestTableIdleExpiry(t *testing.T) {
	t.Parallel()
	tb := caTable(t, 10)
	if !tb.Create(1, "a", "r1", t0) || !tb.Create(1, "b", "r2", t0.Add(2*time.Second)) {
		t.Fatal("Create: want new entries")
	}
	if tb.Create(1, "a", "r1", t0.Add(time.Second)) { // same replica: a use, not a new entry
		t.Fatal("Create of an existing entry reported new")
	}
	// a last used at 1s, b at 2s; a touched at 8s: a expires at 18s, b at 12s.
	if rep, _, ok := tb.Touch(1, "a", t0.Add(8*time.Second)); !ok || rep != "r1" {
		t.Fatalf("Touch a: %q %v", rep, ok)
	}
	if n := tb.Expire(t0.Add(11*time.Second + 999*time.Millisecond)); n != 0 {
		t.Fatalf("Expire at 11.999s dropped %d, want 0", n)
	}
	if n := tb.Expire(t0.Add(12 * time.Second)); n != 1 {
		t.Fatalf("Expire at 12s dropped %d, want 1 (b)", n)
	}
	if _, _, ok := tb.Touch(1, "b", t0.Add(12*time.Second)); ok {
		t.Fatal("b still there after expiry")
	}
	// Touch on an expired entry drops it even before Expire runs.
	if _, _, ok := tb.Touch(1, "a", t0.Add(18*time.Second)); ok {
		t.Fatal("a found at 18s, idle 10s")
	}
	s := tb.Stats()
	if s.Created != 2 || s.Expired != 2 || s.Entries[protocol.AffinityClientActivated] != 0 || s.Entries[protocol.AffinitySingleton] != 0 {
		t.Fatalf("stats %+v, want created 2 expired 2", s)
	}
}

func TestTableOpenConnectionsKeepEntries(t *testing.T) {
	t.Parallel()
	tb := caTable(t, 10)
	tb.Open(1, "10.0.0.1", "r1", t0)
	tb.Open(1, "10.0.0.1", "r1", t0.Add(time.Second)) // second connection
	tb.Create(1, "x", "r2", t0)
	if n := tb.Expire(t0.Add(time.Hour)); n != 1 { // x only
		t.Fatalf("Expire dropped %d, want 1", n)
	}
	tb.Close(1, "10.0.0.1", "r1", t0.Add(time.Hour))
	if n := tb.Expire(t0.Add(2 * time.Hour)); n != 0 {
		t.Fatalf("one connection still open: dropped %d", n)
	}
	tb.Close(1, "10.0.0.1", "r1", t0.Add(2*time.Hour)) // idle from 2h
	if n := tb.Expire(t0.Add(2*time.Hour + 9*time.Second)); n != 0 {
		t.Fatalf("dropped %d at 9s idle", n)
	}
	if n := tb.Expire(t0.Add(2*time.Hour + 10*time.Second)); n != 1 {
		t.Fatalf("dropped %d at 10s idle, want 1", n)
	}
}

func TestTableEvictionGoneAndRenew(t *testing.T) {
	t.Parallel()
	tb := caTable(t, 2)
	tb.Create(1, "a", "r1", t0)
	tb.Create(1, "b", "r2", t0)
	tb.Touch(1, "a", t0.Add(time.Second)) // b is now the least recently used
	tb.Create(1, "c", "r1", t0.Add(2*time.Second))
	if _, _, ok := tb.Touch(1, "b", t0.Add(3*time.Second)); ok {
		t.Fatal("b not evicted")
	}
	// Renewal due once per timeout/3 (3.33s): a was put at 0, touched at 1s.
	if _, renew, _ := tb.Touch(1, "a", t0.Add(3*time.Second)); renew {
		t.Fatal("renew due at 3s")
	}
	if _, renew, _ := tb.Touch(1, "a", t0.Add(4*time.Second)); !renew {
		t.Fatal("renew not due at 4s")
	}
	if _, renew, _ := tb.Touch(1, "a", t0.Add(5*time.Second)); renew {
		t.Fatal("renew due again 1s after the last")
	}
	if !tb.Drop(1, "a", true) || tb.Drop(1, "a", true) {
		t.Fatal("Drop: want true once")
	}
	if n := tb.DropReplica("r1"); n != 1 { // c
		t.Fatalf("DropReplica r1: %d, want 1", n)
	}
	s := tb.Stats()
	if s.Created != 3 || s.Evicted != 1 || s.Gone != 2 || tb.Len() != 0 {
		t.Fatalf("stats %+v len %d", s, tb.Len())
	}
}

func TestTableList(t *testing.T) {
	t.Parallel()
	rules, err := Compile("http", []protocol.AffinityRule{
		{Kind: protocol.AffinityClientActivated, Match: "/a/{id}", Timeout: protocol.Duration(10 * time.Second)},
		{Kind: protocol.AffinityClientActivated, Match: "/b/{id}", Timeout: protocol.Duration(time.Minute)},
	})
	if err != nil {
		t.Fatal(err)
	}
	tb := NewTable(rules)
	tb.Create(1, "z", "r1", t0)
	tb.Create(0, "y", "r2", t0.Add(time.Second))
	tb.Create(0, "x", "r1", t0)
	tb.Create(0, "old", "r1", t0.Add(-time.Minute)) // expired at the listing time
	now := t0.Add(2 * time.Second)
	page := tb.List("", 2, now)
	if page.Total != 3 || len(page.Sessions) != 2 || page.Next != "0/y" {
		t.Fatalf("page 1: %+v", page)
	}
	if s := page.Sessions[0]; s.Rule != 0 || s.Key != "x" || s.Replica != "r1" || !s.Expires.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("first entry %+v", s)
	}
	page = tb.List(page.Next, 2, now)
	if len(page.Sessions) != 1 || page.Sessions[0].Key != "z" || page.Sessions[0].Rule != 1 || page.Next != "" {
		t.Fatalf("page 2: %+v", page)
	}
	if !page.Sessions[0].Expires.Equal(t0.Add(time.Minute)) {
		t.Fatalf("z expires %v", page.Sessions[0].Expires)
	}
}
