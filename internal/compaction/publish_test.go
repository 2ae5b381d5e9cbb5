package compaction

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestShouldPublish(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const raise = 30 * time.Second
	last := lastWrite{rev: 100, lease: 7, at: at}
	for _, tc := range []struct {
		name    string
		now     time.Time
		last    lastWrite
		lease   clientv3.LeaseID
		present bool
		want    int64
		publish bool
	}{
		{"no lease: nothing", at, lastWrite{}, clientv3.NoLease, false, 5, false},
		{"first write", at, lastWrite{}, 7, false, 5, true},
		{"unchanged", at.Add(time.Hour), last, 7, true, 100, false},
		{"lower: at once", at.Add(time.Second), last, 7, true, 90, true},
		{"higher: not before raise", at.Add(raise - time.Second), last, 7, true, 150, false},
		{"higher: after raise", at.Add(raise), last, 7, true, 150, true},
		{"a new lease: at once", at.Add(time.Second), last, 8, false, 100, true},
		{"the key gone: at once", at.Add(time.Second), last, 7, false, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := shouldPublish(tc.now, tc.last, tc.lease, tc.present, tc.want, raise); got != tc.publish {
				t.Fatalf("shouldPublish = %v, want %v", got, tc.publish)
			}
		})
	}
}

func TestNeeds(t *testing.T) {
	t.Parallel()
	var n Needs
	if _, ok := n.Lowest(); ok {
		t.Fatal("empty Needs has a lowest")
	}
	idle := n.Add(func() (int64, bool) { return 0, false })
	if _, ok := n.Lowest(); ok {
		t.Fatal("a source with no watch counts")
	}
	rm := n.Add(func() (int64, bool) { return 40, true })
	n.AddPosition(func() (uint64, bool) { return 60, true })
	if low, ok := n.Lowest(); !ok || low != 40 {
		t.Fatalf("Lowest = %d, %v; want 40", low, ok)
	}
	rm()
	idle()
	if low, ok := n.Lowest(); !ok || low != 60 {
		t.Fatalf("Lowest after removing 40 = %d, %v; want 60", low, ok)
	}
}
