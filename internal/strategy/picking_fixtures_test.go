package strategy_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// replicaSet returns replicas r0, r1, ... with the given weights, no report
// and fresh live counters.
func replicaSet(weights ...float64) []*strategy.Replica {
	rs := make([]*strategy.Replica, len(weights))
	for i, w := range weights {
		rs[i] = &strategy.Replica{
			Index:   i,
			ID:      fmt.Sprintf("r%d", i),
			Weight:  w,
			Metrics: strategy.NoMetrics,
			Live:    new(strategy.Live),
		}
	}
	return rs
}

// withInflight sets the balancer's calls in flight of each replica.
func withInflight(rs []*strategy.Replica, inflight ...int64) []*strategy.Replica {
	for i, n := range inflight {
		rs[i].Live.Inflight.Store(n)
	}
	return rs
}

// reportInflight gives r a fresh report of v calls in flight, arriving
// now (as the balancer notes it: strategy.Live.NoteReport).
func reportInflight(r *strategy.Replica, v float64) {
	r.Reported, r.Metrics.Inflight = true, v
	r.Live.NoteReport(v)
}

// withBindings sets the clients bound to each replica since its report.
func withBindings(rs []*strategy.Replica, bindings ...int64) []*strategy.Replica {
	for i, n := range bindings {
		rs[i].Live.Bindings.Store(n)
	}
	return rs
}

// mustBuild builds the named strategy or fails the test.
func mustBuild(tb testing.TB, name string, params map[string]any, env strategy.Env) strategy.Strategy {
	tb.Helper()
	s, err := strategy.New(name, params, env)
	if err != nil {
		tb.Fatalf("New(%q, %v): %v", name, params, err)
	}
	return s
}

// seededEnv is an Env with a seeded Rand and a manual clock.
func seededEnv(seed uint64) (strategy.Env, *clocktest.Manual) {
	c := clocktest.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	return strategy.Env{Now: c.Now, Rand: strategy.NewRand(seed)}, c
}

// scriptRand answers IntN with its script in turn (mod n), cycling, and
// Float64 with 0.5.
type scriptRand struct {
	mu   sync.Mutex
	ints []int
	next int
}

func (s *scriptRand) IntN(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.ints[s.next%len(s.ints)]
	s.next++
	return v % n
}

func (s *scriptRand) Float64() float64 { return 0.5 }

// pickN picks n times and returns the ids in order.
func pickN(tb testing.TB, p strategy.Picker, req *strategy.Request, n int) []string {
	tb.Helper()
	ids := make([]string, n)
	for i := range ids {
		r, err := p.Pick(req)
		if err != nil {
			tb.Fatalf("pick %d: %v", i, err)
		}
		ids[i] = r.ID
	}
	return ids
}

// tally counts picks per id.
func tally(ids []string) map[string]int {
	m := map[string]int{}
	for _, id := range ids {
		m[id]++
	}
	return m
}

// nan is a metric not reported.
var nan = math.NaN()

// longestRun is the longest run of id in ids.
func longestRun(ids []string, id string) int {
	best, run := 0, 0
	for _, x := range ids {
		if x == id {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}
