package health

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestRunTicksOnItsClock: Run probes at once and then at every tick of the
// clock it is given; time passing elsewhere (the bubble's, standing in for
// the system clock) starts no round, and the probes' latencies are read on
// that clock too.
func TestRunTicksOnItsClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		var probes atomic.Int64
		latencies := make(chan time.Duration, 16)
		p := NewProber(protocol.Health{Interval: protocol.Duration(time.Second), Timeout: protocol.Duration(time.Second)},
			func(string, string) {},
			ProberOptions{
				Clock: clk,
				Probe: func(context.Context, Target) bool {
					probes.Add(1)
					clk.Advance(3 * time.Millisecond) // the probe takes 3ms on the prober's clock
					return true
				},
				OnResult: func(_ string, d time.Duration, _ bool) { latencies <- d },
			})
		p.SetTargets([]Target{{ID: "a", URL: "giop"}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()

		synctest.Wait()
		if n := probes.Load(); n != 1 {
			t.Fatalf("%d probes at start, want 1", n)
		}
		if d := <-latencies; d != 3*time.Millisecond {
			t.Errorf("latency %s, want 3ms on the prober's clock", d)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := probes.Load(); n != 1 {
			t.Fatalf("%d probes after an hour of other time, want still 1", n)
		}
		clk.Advance(time.Second)
		synctest.Wait()
		if n := probes.Load(); n != 2 {
			t.Fatalf("%d probes after the clock's interval, want 2", n)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	})
}
