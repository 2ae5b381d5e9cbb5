package strategy_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

var hashMethods = []string{strategy.HashMaglev, strategy.HashRing}

func TestConsistentHashKeySpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  any // nil: the default
		want strategy.KeySpec
	}{
		{nil, strategy.KeySpec{Source: strategy.KeyClientAddress}},
		{"client-address", strategy.KeySpec{Source: strategy.KeyClientAddress}},
		{"header:X-User-Id", strategy.KeySpec{Source: strategy.KeyHeader, Name: "X-User-Id"}},
		{"cookie:session", strategy.KeySpec{Source: strategy.KeyCookie, Name: "session"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.key), func(t *testing.T) {
			t.Parallel()
			var params map[string]any
			if tt.key != nil {
				params = map[string]any{"key": tt.key}
			}
			s := mustBuild(t, strategy.ConsistentHashName, params, strategy.Env{})
			k, ok := s.(strategy.Keyed)
			if !ok {
				t.Fatal("consistent-hash does not implement Keyed")
			}
			if got := k.KeySpec(); got != tt.want {
				t.Errorf("KeySpec() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// hashKeys are client addresses.
func hashKeys(n int) []strategy.Request {
	reqs := make([]strategy.Request, n)
	for i := range reqs {
		reqs[i].Key = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	return reqs
}

// mapKeys picks once per key and returns the chosen ids.
func mapKeys(tb testing.TB, p strategy.Picker, reqs []strategy.Request) []string {
	tb.Helper()
	ids := make([]string, len(reqs))
	for i := range reqs {
		r, err := p.Pick(&reqs[i])
		if err != nil {
			tb.Fatal(err)
		}
		ids[i] = r.ID
	}
	return ids
}

func TestConsistentHashIsStable(t *testing.T) {
	t.Parallel()
	for _, method := range hashMethods {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			params := map[string]any{"method": method}
			reqs := hashKeys(2000)
			env, _ := seededEnv(1)
			rs := replicaSet(1, 2, 1, 1)
			want := mapKeys(t, mustBuild(t, strategy.ConsistentHashName, params, env).Picker(rs), reqs)
			if got := mapKeys(t, mustBuild(t, strategy.ConsistentHashName, params, env).Picker(rs), reqs); !slices.Equal(got, want) {
				t.Error("a second strategy maps the same keys differently")
			}
			// The same membership in another order (and a new snapshot of
			// it) maps every key to the same replica.
			shuffled := replicaSet(1, 1, 2, 1)
			shuffled[0].ID, shuffled[1].ID, shuffled[2].ID, shuffled[3].ID = "r3", "r2", "r1", "r0"
			env2, _ := seededEnv(99)
			if got := mapKeys(t, mustBuild(t, strategy.ConsistentHashName, params, env2).Picker(shuffled), reqs); !slices.Equal(got, want) {
				t.Error("the snapshot's order changes the mapping")
			}
			// Repeated picks of one key.
			p := mustBuild(t, strategy.ConsistentHashName, params, env).Picker(rs)
			for i := range 100 {
				if got := mapKeys(t, p, reqs[7:8]); got[0] != want[7] {
					t.Fatalf("pick %d of key %s = %s, want %s", i, reqs[7].Key, got[0], want[7])
				}
			}
		})
	}
}

func TestConsistentHashFollowsWeights(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method    string
		weights   []float64
		tolerance float64 // absolute, in share of the keys
	}{
		{strategy.HashMaglev, []float64{1, 1, 1, 1, 1}, 0.01},
		{strategy.HashMaglev, []float64{1, 2, 3}, 0.01},
		{strategy.HashMaglev, []float64{0.5, 4, 1, 2.5}, 0.01},
		// A ring's shares vary as 1/√points: 160 points per mean weight.
		{strategy.HashRing, []float64{1, 1, 1, 1, 1}, 0.05},
		{strategy.HashRing, []float64{1, 2, 3}, 0.05},
		{strategy.HashRing, []float64{0.5, 4, 1, 2.5}, 0.05},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.method, tt.weights), func(t *testing.T) {
			t.Parallel()
			env, _ := seededEnv(1)
			s := mustBuild(t, strategy.ConsistentHashName, map[string]any{"method": tt.method}, env)
			rs := replicaSet(tt.weights...)
			const n = 60000
			keyed := tally(mapKeys(t, s.Picker(rs), hashKeys(n)))
			// A request without a key goes to a random replica, weighted.
			unkeyed := tally(pickN(t, s.Picker(rs), &strategy.Request{}, n))
			var total float64
			for _, w := range tt.weights {
				total += w
			}
			for i, r := range rs {
				want := tt.weights[i] / total
				if got := float64(keyed[r.ID]) / n; math.Abs(got-want) > tt.tolerance {
					t.Errorf("%s (weight %v) has %.3f of the keys, want %.3f ± %.2f", r.ID, tt.weights[i], got, want, tt.tolerance)
				}
				if got := float64(unkeyed[r.ID]) / n; math.Abs(got-want) > tt.tolerance {
					t.Errorf("%s (weight %v) has %.3f of the unkeyed picks, want %.3f ± %.2f", r.ID, tt.weights[i], got, want, tt.tolerance)
				}
			}
		})
	}
}

func TestConsistentHashMovesFewKeysWhenAReplicaLeaves(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method   string
		weights  []float64
		maxMoved float64 // share of the keys not on the leaving replica that move
	}{
		// Maglev gives up a little stability for even shares (NSDI 2016 §5.3).
		{strategy.HashMaglev, []float64{1, 1, 1, 1, 1}, 0.01},
		{strategy.HashMaglev, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.01},
		{strategy.HashMaglev, []float64{1, 2, 3, 1}, 0.01},
		// A ring moves only the leaving replica's keys.
		{strategy.HashRing, []float64{1, 1, 1, 1, 1}, 0},
		{strategy.HashRing, []float64{1, 2, 3, 1}, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.method, tt.weights), func(t *testing.T) {
			t.Parallel()
			env, _ := seededEnv(1)
			s := mustBuild(t, strategy.ConsistentHashName, map[string]any{"method": tt.method}, env)
			rs := replicaSet(tt.weights...)
			reqs := hashKeys(50000)
			before := mapKeys(t, s.Picker(rs), reqs)

			const leaving = "r1"
			var rest []*strategy.Replica
			for _, r := range rs {
				if r.ID != leaving {
					r := *r // a new snapshot: new positions, same live state
					r.Index = len(rest)
					rest = append(rest, &r)
				}
			}
			after := mapKeys(t, s.Picker(rest), reqs)
			var stayed, moved int
			took := map[string]int{}
			for i := range reqs {
				if after[i] == leaving {
					t.Fatalf("key %s still goes to the replica that left", reqs[i].Key)
				}
				if before[i] == leaving {
					took[after[i]]++
					continue
				}
				stayed++
				if after[i] != before[i] {
					moved++
				}
			}
			if share := float64(moved) / float64(stayed); share > tt.maxMoved {
				t.Errorf("%.4f of the other replicas' keys moved, want at most %.4f", share, tt.maxMoved)
			}
			// The leaving replica's keys spread over all the others.
			if len(took) != len(rest) {
				t.Errorf("the leaving replica's keys went to %v, want all %d others", took, len(rest))
			}
			// Coming back restores the original mapping exactly.
			if again := mapKeys(t, s.Picker(rs), reqs); !slices.Equal(again, before) {
				t.Error("the replica came back but the mapping differs from before it left")
			}
		})
	}
}

func TestConsistentHashMoreReplicasThanSlots(t *testing.T) {
	t.Parallel()
	env, _ := seededEnv(1)
	s := mustBuild(t, strategy.ConsistentHashName, map[string]any{"table_size": 7}, env)
	rs := replicaSet(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	if got := tally(mapKeys(t, s.Picker(rs), hashKeys(1000))); len(got) > 7 {
		t.Errorf("%d replicas got keys from a 7-slot table", len(got))
	}
}
