package effectiveness

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestPacedClientIsOpenLoop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var sent []time.Duration
		calls := 0
		c := &pacedClient{rate: 100}
		c.call = func(ctx context.Context) (string, error) {
			mu.Lock()
			sent = append(sent, time.Since(start))
			n := calls
			calls++
			mu.Unlock()
			switch {
			case n == 10:
				time.Sleep(300 * time.Millisecond) // a stall
			case n == 20:
				return "", errors.New("refused")
			default:
				time.Sleep(time.Millisecond)
			}
			if n < 50 {
				return "a", nil
			}
			return "b", nil
		}
		log := newServeLog(start)
		c.run(context.Background(), start, start.Add(2*time.Second), log)

		if len(sent) != 200 {
			t.Fatalf("sent %d calls in 2s at 100/s, want 200", len(sent))
		}
		for k, at := range sent {
			if want := time.Duration(k) * 10 * time.Millisecond; at != want {
				t.Fatalf("call %d sent at %v, want %v: the stall delayed later calls", k, at, want)
			}
		}
		s := c.rec.Summary()
		if s.Count != 199 {
			t.Errorf("recorded %d latencies, want 199 (one failed)", s.Count)
		}
		if s.Max < 300e3 || s.P50 != 1000 {
			t.Errorf("max %vµs p50 %vµs, want ≥ 300ms and 1ms", s.Max, s.P50)
		}
		tr, stray := log.snapshot([]string{"a", "b"}, 2)
		if stray != 0 {
			t.Errorf("%d calls served by unknown replicas", stray)
		}
		// Calls count in the second they were meant to be sent: second 0
		// holds calls 0–99, of which one failed.
		if got := tr.Served[0]; got[0] != 49 || got[1] != 50 {
			t.Errorf("second 0 served %v, want [49 50]", got)
		}
		if tr.Failed[0] != 1 {
			t.Errorf("failed %v, want 1 in second 0", tr.Failed)
		}
	})
}

func TestPacedClientCountsBindingChanges(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := 0
		bound := []string{"", "a", "a", "b", "b", "", "b", "c"}
		c := &pacedClient{rate: 10}
		c.call = func(ctx context.Context) (string, error) { return "a", nil }
		c.bound = func() string { b := bound[n%len(bound)]; n++; return b }
		log := newServeLog(start)
		c.run(context.Background(), start, start.Add(800*time.Millisecond), log)
		tr, _ := log.snapshot([]string{"a"}, 1)
		// a → b → c; an unbound moment in between is not a change.
		if tr.Rebinds[0] != 2 {
			t.Errorf("rebinds %v, want 2", tr.Rebinds)
		}
	})
}

func TestPacedClientStopsOnCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		c := &pacedClient{rate: 50}
		c.call = func(ctx context.Context) (string, error) {
			<-ctx.Done() // a call that never answers
			return "", ctx.Err()
		}
		done := make(chan struct{})
		go func() {
			c.run(ctx, start, start.Add(time.Hour), newServeLog(start))
			close(done)
		}()
		time.Sleep(time.Second)
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("run did not return after cancel")
		}
		if c.rec.Count() != 0 {
			t.Errorf("cancelled calls were recorded")
		}
	})
}
