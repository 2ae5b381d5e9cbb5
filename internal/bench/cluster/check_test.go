package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    Cluster
		size bench.Size
		want string // "" for valid
	}{
		{"defaults", Cluster{}, bench.Full, ""},
		{"smoke", Cluster{}, bench.Smoke, ""},
		{"few rounds", Cluster{Rounds: 4}, bench.Full, "--rounds 4, must be at least 5"},
		{"few calls", Cluster{Calls: 29, Rounds: 5}, bench.Full, "--calls 29, must be at least 30"},
		{"negative replicas", Cluster{Replicas: -1}, bench.Full, "--replicas -1, must be positive"},
		{"too many replicas", Cluster{Replicas: 20_001}, bench.Full, "--replicas 20001, must be at most 20000"},
		{"too many groups", Cluster{Replicas: 5, Groups: 6}, bench.Full, "--groups 6, must be in [1, --replicas (5)]"},
		{"short window", Cluster{Window: 500 * time.Millisecond}, bench.Full, "--window 500ms, must be at least 1s"},
		{"negative registrations", Cluster{Registrations: -3}, bench.Full, "--registrations -3, must be positive"},
		{"negative eff replicas", Cluster{EffReplicas: -1}, bench.Full, "--eff-replicas -1, must be positive"},
		{"too many eff replicas", Cluster{EffReplicas: 65}, bench.Full, "--eff-replicas 65, must be in [1, 64]"},
		{"negative eff duration", Cluster{EffDuration: -time.Second}, bench.Full, "--eff-duration -1s, must be positive"},
		{"short eff duration", Cluster{EffDuration: 500 * time.Millisecond}, bench.Full, "--eff-duration 500ms, must be at least 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.c.Check(tc.size)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check: %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The sizes: the 1,000 replicas in 10 groups and 200
// registrations by default; seconds with --smoke.
func TestSettings(t *testing.T) {
	t.Parallel()
	full := (&Cluster{}).settings(bench.Full)
	if full.Replicas != 1000 || full.Groups != 10 || full.Registrations != 200 {
		t.Errorf("full settings %+v, want 1000 replicas in 10 groups and 200 registrations", full)
	}
	smoke := (&Cluster{}).settings(bench.Smoke)
	if smoke.window > 3*time.Second || smoke.Calls > 1000 || smoke.Replicas > 100 {
		t.Errorf("smoke settings %+v are not seconds", smoke)
	}
	// The effectiveness phase: the effectiveness experiment's clients in
	// its start order, its 60 s runs on 4 replicas by default.
	if full.EffReplicas != 4 || full.effDuration != time.Minute || !slices.Equal(full.EffRates, []float64{100, 50, 100, 50, 100, 50, 100, 50}) {
		t.Errorf("full effectiveness settings %d replicas, %s, rates %v; want 4, 1m0s and the effectiveness defaults interleaved", full.EffReplicas, full.effDuration, full.EffRates)
	}
	if smoke.effDuration > 3*time.Second || smoke.EffReplicas > 2 {
		t.Errorf("smoke effectiveness settings %d replicas, %s: not seconds", smoke.EffReplicas, smoke.effDuration)
	}
	flags := (&Cluster{Replicas: 50, Groups: 5, Window: 4 * time.Second}).settings(bench.Smoke)
	if flags.Replicas != 50 || flags.Groups != 5 || flags.window != 4*time.Second {
		t.Errorf("flags ignored: %+v", flags)
	}
}

// "bench cluster" is registered, and "bench all" leaves it out (it needs
// etcd) with or without --testbed.
func TestRegisteredByNameOnly(t *testing.T) {
	t.Parallel()
	if _, ok := bench.New("cluster"); !ok {
		t.Fatal("cluster is not registered")
	}
	for _, testbed := range []bool{false, true} {
		if slices.Contains(bench.AllNames(testbed), "cluster") {
			t.Errorf("bench.AllNames(%v) = %v includes cluster", testbed, bench.AllNames(testbed))
		}
	}
}
