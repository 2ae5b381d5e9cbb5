package balancer

import (
	"strconv"
	"testing"
)

// TestEventLogSince: seqs count from 1 across all appends, each id is
// "<instance>-<seq>"; Since returns
// exactly the kept events after an id, and says when it cannot (too old,
// ahead); append never waits for a reader and wakes them all.
func TestEventLogSince(t *testing.T) {
	t.Parallel()
	l := newEventLog("fulcrum-a", 4)
	if evs, last, ok, _ := l.Since(0); !ok || last != 0 || len(evs) != 0 {
		t.Fatalf("empty log: %v %d %v", evs, last, ok)
	}
	_, _, _, wake := l.Since(0)
	for i := 1; i <= 6; i++ { // no reader reads: appends go on regardless
		if ev := l.append(Event{Type: "step", Group: "g"}); ev.Seq != uint64(i) || ev.ID != "fulcrum-a-"+strconv.Itoa(i) {
			t.Fatalf("append %d got seq %d id %q", i, ev.Seq, ev.ID)
		}
	}
	select {
	case <-wake:
	default:
		t.Fatal("readers not woken")
	}
	tests := []struct {
		name  string
		after uint64
		ids   []uint64
		ok    bool
	}{
		{"just kept", 2, []uint64{3, 4, 5, 6}, true},
		{"middle", 4, []uint64{5, 6}, true},
		{"latest", 6, nil, true},
		{"older than the ring", 1, nil, false},
		{"from the start, overwritten", 0, nil, false},
		{"ahead", 7, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs, last, ok, _ := l.Since(tc.after)
			if ok != tc.ok || last != 6 || len(evs) != len(tc.ids) {
				t.Fatalf("Since(%d) = %d events, last %d, ok %v; want %v, 6, %v", tc.after, len(evs), last, ok, tc.ids, tc.ok)
			}
			for i, ev := range evs {
				if ev.Seq != tc.ids[i] || ev.Group != "g" {
					t.Errorf("event %d: seq %d group %q, want %d g", i, ev.Seq, ev.Group, tc.ids[i])
				}
			}
		})
	}
}

// TestEventLogParse: only "<this instance>-<seq>" reads as a seq; another
// instance's id (even one whose name ends like this one's) and anything
// else do not.
func TestEventLogParse(t *testing.T) {
	t.Parallel()
	l := newEventLog("fulcrum-a", 4)
	tests := []struct {
		id  string
		seq uint64
		ok  bool
	}{
		{"fulcrum-a-0", 0, true},
		{"fulcrum-a-17", 17, true},
		{"fulcrum-b-17", 0, false},
		{"a-17", 0, false},
		{"xfulcrum-a-17", 0, false},
		{"fulcrum-a-", 0, false},
		{"fulcrum-a-+1", 0, false},
		{"fulcrum-a-017", 0, false},
		{"fulcrum-a-1-2", 0, false},
		{"17", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			if seq, ok := l.parse(tc.id); seq != tc.seq || ok != tc.ok {
				t.Errorf("parse(%q) = %d, %v; want %d, %v", tc.id, seq, ok, tc.seq, tc.ok)
			}
		})
	}
	if id := l.id(17); id != "fulcrum-a-17" {
		t.Errorf("id(17) = %q", id)
	}
}
