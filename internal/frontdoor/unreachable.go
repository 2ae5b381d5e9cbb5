package frontdoor

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCallTimeout is a proxied call that exceeded its group's request
// timeout (answered 504 over HTTP).
var ErrCallTimeout = errors.New("frontdoor: proxied call exceeded the group's request timeout")

// ErrLoop is a request that came back to the balancer that proxied it
// (a replica address pointing at one of its own front doors): it is not
// forwarded again (HTTP 508 Loop Detected).
var ErrLoop = errors.New("frontdoor: the request already passed through this balancer (proxy loop)")

// UnreachableError says that no replica could be reached: every attempt
// failed to connect (so the call never ran), and no other replica was left
// to try. It unwraps to the pick's sentinel (ErrNoReplica or
// ErrOverloaded).
type UnreachableError struct {
	// Pick is why no other member was picked.
	Pick error
	// Tried are the ids of the members that could not be reached.
	Tried []string
	// Last is the last connect error.
	Last error
}

// Unreachable returns the error of a call whose members tried all failed
// to connect, last with last, and for which pick found no other.
func Unreachable(pick error, tried []*Member, last error) *UnreachableError {
	ids := make([]string, len(tried))
	for i, m := range tried {
		ids[i] = m.ID()
	}
	return &UnreachableError{Pick: pick, Tried: ids, Last: last}
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("connecting to %s failed (%v); %v", strings.Join(e.Tried, ", "), e.Last, e.Pick)
}

func (e *UnreachableError) Unwrap() error { return e.Pick }
