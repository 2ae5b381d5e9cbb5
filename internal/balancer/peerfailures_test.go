package balancer

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestPeerFailuresWarnOncePerMinute: every failure counts under its kind;
// a warning is due for the first failure to a peer and then at most once
// per PushWarnInterval for that peer.
func TestPeerFailuresWarnOncePerMinute(t *testing.T) {
	t.Parallel()
	f := newPeerFailures()
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	steps := []struct {
		kind, peer string
		at         time.Duration
		warn       bool
	}{
		{pushKindLoads, "https://b:7070", 0, true},
		{pushKindLoads, "https://b:7070", time.Second, false},
		{pushKindBound, "https://b:7070", 30 * time.Second, false},
		{pushKindLoads, "https://c:7070", 30 * time.Second, true},
		{pushKindLoads, "https://b:7070", PushWarnInterval - time.Millisecond, false},
		{pushKindBound, "https://b:7070", PushWarnInterval, true},
		{pushKindLoads, "https://b:7070", PushWarnInterval + time.Second, false},
	}
	for i, s := range steps {
		if got := f.warnDue(s.kind, s.peer, t0.Add(s.at)); got != s.warn {
			t.Errorf("step %d (%s to %s at +%v): warn %v, want %v", i, s.kind, s.peer, s.at, got, s.warn)
		}
	}
	if got := count(t, f, pushKindLoads); got != 5 {
		t.Errorf("loads failures = %v, want 5", got)
	}
	if got := count(t, f, pushKindBound); got != 2 {
		t.Errorf("bound failures = %v, want 2", got)
	}
}

// count is the failures of kind f counted.
func count(t *testing.T, f *peerFailures, kind string) float64 {
	t.Helper()
	var m dto.Metric
	if err := f.total.WithLabelValues(kind).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
