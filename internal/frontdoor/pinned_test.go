package frontdoor

import (
	"errors"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestAcquirePinned: a pinned call goes to its member only, active or
// draining and below max_inflight; otherwise an *AffinityError says why.
func TestAcquirePinned(t *testing.T) {
	s := snapshot(3, 1)
	s.Members["b"].State = protocol.StateDraining
	s.Members["c"].State = protocol.StateEjected
	pin := func(id string) AffinityDecision {
		return AffinityDecision{Rule: 0, Kind: protocol.AffinityClientActivated, Key: "k", Replica: id}
	}
	m, err := s.AcquirePinned(pin("b"))
	if err != nil || m != s.Members["b"] || m.Replica.Live.Inflight.Load() != 1 {
		t.Fatalf("pinned to draining b: %v, %v", m, err)
	}
	tests := []struct {
		d    AffinityDecision
		want string
	}{
		{pin("b"), "max_inflight"}, // b holds its one call
		{pin("c"), "ejected on this instance"},
		{pin("x"), "not a member"},
		{AffinityDecision{Rule: 1, Kind: protocol.AffinityClientActivated, Key: "k", Replica: "a", Gone: true}, "lost with replica a"},
	}
	for _, tt := range tests {
		_, err := s.AcquirePinned(tt.d)
		var ae *AffinityError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.want) || ae.Decision != tt.d {
			t.Errorf("AcquirePinned(%+v) = %v, want an *AffinityError saying %q", tt.d, err, tt.want)
		}
	}
	m.Release()
	if got := s.Members["c"].Replica.Live.Inflight.Load() + s.Members["a"].Replica.Live.Inflight.Load(); got != 0 {
		t.Fatalf("refused calls were counted: %d", got)
	}
	if n := testing.AllocsPerRun(100, func() {
		m, err := s.AcquirePinned(pin("a"))
		if err == nil {
			m.Release()
		}
	}); n != 0 {
		t.Fatalf("AcquirePinned allocates %v", n)
	}
}
