package etcdstore

import (
	"testing"
	"time"
)

func TestLeaseTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		timeout time.Duration
		want    int64
	}{
		{time.Second, 2},
		{1500 * time.Millisecond, 2},
		{2 * time.Second, 2},
		{2001 * time.Millisecond, 3},
		{5 * time.Minute, 300},
		{0, 2},
	} {
		if got := LeaseTTL(tc.timeout); got != tc.want {
			t.Errorf("LeaseTTL(%v) = %d, want %d", tc.timeout, got, tc.want)
		}
	}
}

func TestRenewDue(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		last    time.Time
		timeout time.Duration
		now     time.Time
		want    bool
	}{
		{"never renewed here", time.Time{}, 30 * time.Second, t0, true},
		{"just renewed", t0, 30 * time.Second, t0, false},
		{"under a third", t0, 30 * time.Second, t0.Add(9999 * time.Millisecond), false},
		{"at a third", t0, 30 * time.Second, t0.Add(10 * time.Second), true},
		{"past a third", t0, 30 * time.Second, t0.Add(29 * time.Second), true},
		{"clock went back", t0, 30 * time.Second, t0.Add(-time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := renewDue(tc.last, tc.timeout, tc.now); got != tc.want {
				t.Errorf("renewDue(%v, %v, %v) = %v, want %v", tc.last, tc.timeout, tc.now, got, tc.want)
			}
		})
	}
}
