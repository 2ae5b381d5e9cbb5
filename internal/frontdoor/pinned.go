package frontdoor

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// AffinityError is why a call or connection an affinity rule pins to a
// replica cannot go there (docs/affinity.md): Gone, the object was lost
// with its replica (HTTP 410, TCP a refused connection); otherwise the
// replica cannot take it on this instance (HTTP 503, TCP refused): the
// call is never sent elsewhere.
type AffinityError struct {
	Decision AffinityDecision
	// Reason says why, e.g. "replica r1 is ejected".
	Reason string
}

func (e *AffinityError) Error() string {
	if e.Decision.Gone {
		return fmt.Sprintf("frontdoor: the object %q (affinity[%d], %s) was lost with replica %s", e.Decision.Key, e.Decision.Rule, e.Decision.Kind, e.Decision.Replica)
	}
	return fmt.Sprintf("frontdoor: the %s object %q (affinity[%d]) is on replica %s, which cannot take it here: %s", e.Decision.Kind, e.Decision.Key, e.Decision.Rule, e.Decision.Replica, e.Reason)
}

// AcquirePinned counts a call on the member d pins (d.Replica set, not
// Gone) when it can take it here: a member in state active, or draining
// (its client-activated objects stay on it), below MaxInflight. Errors:
// *AffinityError (Gone as well). End the call with Release or Hold.End,
// as after Acquire. AcquirePinned does not allocate when it succeeds.
func (s *Snapshot) AcquirePinned(d AffinityDecision) (*Member, error) {
	if d.Gone {
		return nil, &AffinityError{Decision: d, Reason: "gone"}
	}
	m := s.Members[d.Replica]
	switch {
	case m == nil:
		return nil, &AffinityError{Decision: d, Reason: "it is not a member of the group"}
	case m.State != protocol.StateActive && m.State != protocol.StateDraining:
		return nil, &AffinityError{Decision: d, Reason: "it is " + m.State + " on this instance"}
	case !tryAcquire(m, s.MaxInflight):
		return nil, &AffinityError{Decision: d, Reason: fmt.Sprintf("it has %d calls in flight (max_inflight)", s.MaxInflight)}
	}
	return m, nil
}
