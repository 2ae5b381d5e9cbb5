package proctest

import (
	"context"
	"testing"
	"time"
)

// pollEvery is how often Poll asks.
const pollEvery = 50 * time.Millisecond

// Poll calls cond every 50ms until it returns true, for state that real
// processes change and nobody announces (a file written, a replica
// registered). It fails the test if ctx ends first, with what (what is
// waited for) and what cond said last.
func Poll(ctx context.Context, t testing.TB, what string, cond func() (ok bool, state string)) {
	t.Helper()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last: %s", what, ctx.Err(), state)
		}
	}
}
