package remoting

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// TestStatefulMix: the mix keeps every call's X and gap, is the same for
// the same seed, makes about share of the calls stateful, half singleton
// and half client-activated, and draws singleton names in range; share
// 0 makes every call single-call.
func TestStatefulMix(t *testing.T) {
	t.Parallel()
	plan := make([][]remotingCall, 4)
	for c := range plan {
		plan[c] = remotingSample(uint64(c), 2500, 1000, time.Millisecond)
	}
	mix := statefulMix(7, plan, 0.4, 3)
	if again := statefulMix(7, plan, 0.4, 3); !slices.EqualFunc(mix, again, slices.Equal) {
		t.Error("the same seed drew another mix")
	}
	var counts [numKinds]int
	for c := range plan {
		for i, call := range mix[c] {
			if call.remotingCall != plan[c][i] {
				t.Fatalf("client %d call %d: %+v, want the plan's %+v", c, i, call.remotingCall, plan[c][i])
			}
			if call.kind == kindSingleton && (call.singleton < 0 || call.singleton >= 3) {
				t.Fatalf("singleton %d of 3", call.singleton)
			}
			counts[call.kind]++
		}
	}
	total := 4 * 2500
	stateful := float64(counts[kindSingleton]+counts[kindActivated]) / float64(total)
	if stateful < 0.37 || stateful > 0.43 {
		t.Errorf("stateful share %.3f, want about 0.4 (%v)", stateful, counts)
	}
	if half := float64(counts[kindSingleton]) / float64(counts[kindSingleton]+counts[kindActivated]); half < 0.45 || half > 0.55 {
		t.Errorf("singletons are %.3f of the stateful calls, want about half", half)
	}
	for _, c := range statefulMix(7, plan, 0, 3) {
		for _, call := range c {
			if call.kind != kindSingleCall {
				t.Fatalf("share 0 made a %s call", call.kind)
			}
		}
	}
}

// statefulRun is the answers of a run worked out by hand: objects a (on
// r1) and b (on r2), singletons s0 and s1.
func statefulRun() *statefulAnswers {
	a := newStatefulAnswers()
	a.creators["a"], a.creators["b"] = "r1", "r2"
	for range 3 {
		a.answered(a.objects, "a", "r1")
	}
	a.answered(a.objects, "b", "r2")
	for range 4 {
		a.answered(a.single, "s0", "r2")
	}
	a.answered(a.single, "s1", "r1")
	return a
}

// TestStatefulAnswersChecks: misrouted counts the calls answered by
// another replica than the object's creator and, for a singleton, by
// any but the replica that answered most; countMismatches compares the
// replicas' counts with the answers and names the first difference.
func TestStatefulAnswersChecks(t *testing.T) {
	t.Parallel()
	good := []backend.ObjectCounts{
		{ServedBy: "r1", Objects: map[string]int64{"a": 3, "other-run": 9}, Singletons: map[string]int64{"s1": 1}},
		{ServedBy: "r2", Objects: map[string]int64{"b": 1}, Singletons: map[string]int64{"s0": 4, "other": 2}},
	}
	for _, tc := range []struct {
		name      string
		edit      func(a *statefulAnswers, counts []backend.ObjectCounts)
		misrouted int64
		// mismatches and mismatch: countMismatches's count and the start
		// of its first description.
		mismatches int
		mismatch   string
	}{
		{"every call on its object's replica", func(*statefulAnswers, []backend.ObjectCounts) {}, 0, 0, ""},
		{"an object's call answered elsewhere", func(a *statefulAnswers, _ []backend.ObjectCounts) {
			a.answered(a.objects, "a", "r2")
		}, 1, 0, ""},
		{"a singleton answered by two replicas", func(a *statefulAnswers, counts []backend.ObjectCounts) {
			a.answered(a.single, "s0", "r1")
			counts[0].Singletons["s0"] = 1
		}, 1, 1, "singleton s0: held by [r1 r2] with 5 calls counted, 5 answered"},
		{"a replica counted a call whose answer was lost", func(_ *statefulAnswers, counts []backend.ObjectCounts) {
			counts[0].Objects["a"] = 4
		}, 0, 1, "object a, created on r1: held by [r1], 4 calls counted there, 3 answered"},
		{"an object held by two replicas", func(_ *statefulAnswers, counts []backend.ObjectCounts) {
			counts[1].Objects["a"] = 0
		}, 0, 1, "object a, created on r1: held by [r1 r2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := statefulRun()
			counts := make([]backend.ObjectCounts, len(good))
			for i, c := range good {
				counts[i] = backend.ObjectCounts{ServedBy: c.ServedBy, Objects: map[string]int64{}, Singletons: map[string]int64{}}
				for k, v := range c.Objects {
					counts[i].Objects[k] = v
				}
				for k, v := range c.Singletons {
					counts[i].Singletons[k] = v
				}
			}
			tc.edit(a, counts)
			if got := a.misrouted(); got != tc.misrouted {
				t.Errorf("misrouted = %d, want %d", got, tc.misrouted)
			}
			n, first := a.countMismatches(counts)
			if n != tc.mismatches || !strings.HasPrefix(first, tc.mismatch) {
				t.Errorf("countMismatches = %d, %q; want %d, %q", n, first, tc.mismatches, tc.mismatch)
			}
		})
	}
}

// TestStatefulDefaults: the stateful case runs its own strategies unless
// --strategies was given, and the group's affinity block has both rules.
func TestStatefulDefaults(t *testing.T) {
	t.Parallel()
	x := newRemoting()
	if got := x.statefulStrategies(bench.Smoke); !slices.Equal(got, []string{"least-loaded", "random"}) {
		t.Errorf("smoke strategies %v", got)
	}
	x.Strategies = []string{"round-robin", "random"}
	if got := x.statefulStrategies(bench.Full); !slices.Equal(got, x.Strategies) {
		t.Errorf("strategies given: %v, want %v", got, x.Strategies)
	}
	if x.groupExtra() != "" {
		t.Error("the scheduling case's group has affinity rules")
	}
	x.Case = RemotingCaseStateful
	extra := x.groupExtra()
	for _, want := range []string{"    affinity:\n", "kind: client-activated\n        match: /objects/{id}\n        timeout: 5m0s\n", "kind: singleton\n        match: /singletons/{name}\n"} {
		if !strings.Contains(extra, want) {
			t.Errorf("affinity block %q has no %q", extra, want)
		}
	}
}
