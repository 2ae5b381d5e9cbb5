package balancer

import "testing"

// TestEventLogSince: ids count from 1 across all appends; Since returns
// exactly the kept events after an id, and says when it cannot (too old,
// ahead); append never waits for a reader and wakes them all.
func TestEventLogSince(t *testing.T) {
	t.Parallel()
	l := newEventLog(4)
	if evs, last, ok, _ := l.Since(0); !ok || last != 0 || len(evs) != 0 {
		t.Fatalf("empty log: %v %d %v", evs, last, ok)
	}
	_, _, _, wake := l.Since(0)
	for i := 1; i <= 6; i++ { // no reader reads: appends go on regardless
		if ev := l.append(Event{Type: "step", Group: "g"}); ev.ID != uint64(i) {
			t.Fatalf("append %d got id %d", i, ev.ID)
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
				if ev.ID != tc.ids[i] || ev.Group != "g" {
					t.Errorf("event %d: id %d group %q, want %d g", i, ev.ID, ev.Group, tc.ids[i])
				}
			}
		})
	}
}
