//go:build linux

package e2e

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBenchRemotingSmoke runs "fulcrum bench remoting --smoke": two
// replicas on the testbed, NGINX counting primes in Lua with its agent
// reporting (the default), every strategy at two utilisations; every
// call is answered and every row has its figures and its reduction. The
// bench checks every replica's counts against the Go sieve before it
// measures, so a wrong answer fails the run.
func TestBenchRemotingSmoke(t *testing.T) {
	needTestbed(t)
	t.Parallel()
	res, out := runBench(t, "remoting", "remoting.csv", "remoting-latency-2.png", "remoting-reduction.png")
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRemotingReplica(t, raw, "nginx")
	checkRemotingSmoke(t, res, 0, 1)
}

// TestBenchRemotingGoSmoke is the same with Go replicas (fulcrum backend
// prime, reporting through the monitor library), in two repeats: each on
// a group set up afresh, every row pooling both.
func TestBenchRemotingGoSmoke(t *testing.T) {
	needTestbed(t)
	t.Parallel()
	raw, _ := benchSmoke(t, "fulcrum bench remoting --replica go --repeats 2", "remoting", []string{"--replica", "go", "--repeats", "2"})
	var res benchResults
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	checkRemotingReplica(t, raw, "go")
	checkRemotingSmoke(t, res, 1, 2)
	var top struct {
		Groups []struct {
			Replicas, Repeat int
		} `json:"groups"`
	}
	if err := json.Unmarshal(raw, &top); err != nil || len(top.Groups) != 2 || top.Groups[0].Repeat != 1 || top.Groups[1].Repeat != 2 {
		t.Errorf("results.json groups %+v (%v), want two set-ups of 2 replicas, repeats 1 and 2", top.Groups, err)
	}
}

// checkRemotingReplica checks that results.json's settings name replica.
func checkRemotingReplica(t *testing.T, raw []byte, replica string) {
	t.Helper()
	var top struct {
		Settings map[string]any `json:"settings"`
	}
	if err := json.Unmarshal(raw, &top); err != nil || top.Settings["replica"] != replica {
		t.Errorf("results.json settings = %v (%v), want replica %s", top.Settings, err, replica)
	}
}

// checkRemotingSmoke checks a --smoke run's rows; leadMS is the
// replica's default queue.lead for ett+queue and repeats the run's
// --repeats.
func checkRemotingSmoke(t *testing.T, res benchResults, leadMS float64, repeats int) {
	t.Helper()
	strategies := []string{"ett", "ett+queue", "least-loaded", "least-connections", "round-robin", "random"}
	seen := map[float64][]string{}
	for _, row := range res.Rows {
		what := func() string { return "row " + row["strategy"].(string) }
		if row["replicas"] != 2.0 {
			t.Errorf("%s: replicas %v, want 2 (--smoke)", what(), row["replicas"])
		}
		u, _ := row["utilization"].(float64)
		seen[u] = append(seen[u], row["strategy"].(string))
		// Two clients per replica, 15 calls each, in every repeat.
		if row["calls"] != 60.0*float64(repeats) || row["errors"] != 0.0 || row["clients"] != 4.0 {
			t.Errorf("%s at %v: calls %v, errors %v, clients %v; want %d, 0, 4", what(), u, row["calls"], row["errors"], row["clients"], 60*repeats)
		}
		checkRemotingRepeats(t, what(), row, repeats)
		for _, k := range []string{"gap_ms", "offered_rps", "latency_mean_ms", "latency_p50_ms", "latency_p99_ms", "throughput_rps", "replica_cpu", "capacity_utilization"} {
			if v, ok := row[k].(float64); !ok || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s at %v: %s = %v, want a positive number", what(), u, k, row[k])
			}
		}
		// The load is set against the capacity by default, so every row
		// has capacity_utilization. ett+queue runs with max_inflight 1,
		// the queue and the replica's lead; the others with none of them.
		queued := row["strategy"] == "ett+queue"
		slots, _ := row["queue_slots"].(float64)
		lead, _ := row["queue_lead_ms"].(float64)
		wantSlots, wantLead := 0.0, 0.0
		if queued {
			wantSlots, wantLead = 1, leadMS
		}
		if slots != wantSlots || lead != wantLead {
			t.Errorf("%s at %v: queue_slots %v, queue_lead_ms %v; want %v, %v", what(), u, row["queue_slots"], row["queue_lead_ms"], wantSlots, wantLead)
		}
		// The part of its mean spent in the front door's queue, and the
		// share of its calls that waited there.
		wait, hasWait := row["queue_wait_ms"].(float64)
		waited, hasWaited := row["queue_waited"].(float64)
		switch {
		case queued && (!hasWait || !hasWaited || wait < 0 || wait > row["latency_mean_ms"].(float64) || waited < 0 || waited > 1):
			t.Errorf("%s at %v: queue_wait_ms %v, queue_waited %v; want a wait within the mean and a share in [0, 1]", what(), u, row["queue_wait_ms"], row["queue_waited"])
		case !queued && (row["queue_wait_ms"] != nil || row["queue_waited"] != nil):
			t.Errorf("%s at %v: queue_wait_ms %v, queue_waited %v without a queue", what(), u, row["queue_wait_ms"], row["queue_waited"])
		}
		red, ok := row["reduction_vs_random"].(float64)
		switch {
		case !ok || red >= 1:
			t.Errorf("%s at %v: reduction_vs_random = %v, want a number below 1", what(), u, row["reduction_vs_random"])
		case row["strategy"] == "random" && red != 0:
			t.Errorf("random's reduction against itself is %v", red)
		}
	}
	for _, u := range []float64{0.5, 0.9} {
		got := slices.Clone(seen[u])
		slices.Sort(got)
		want := slices.Clone(strategies)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("strategies at %v: %v, want %v", u, seen[u], strategies)
		}
	}
}

// checkRemotingRepeats checks a row's per-repeat figures: repeats of
// them (a flag, possibly empty, for each), each repeat's 60 calls
// answered at a positive mean, and its reduction against random's (0 for
// random).
func checkRemotingRepeats(t *testing.T, what string, row map[string]any, repeats int) {
	t.Helper()
	means, _ := row["repeat_means_ms"].([]any)
	calls, _ := row["repeat_calls"].([]any)
	reds, _ := row["reduction_repeats"].([]any)
	flags, _ := row["repeat_flags"].([]any)
	if row["repeats"] != float64(repeats) || len(means) != repeats || len(calls) != repeats || len(reds) != repeats || len(flags) != repeats {
		t.Errorf("%s: repeats %v, means %v, calls %v, reductions %v, flags %v; want %d of each", what, row["repeats"], means, calls, reds, flags, repeats)
		return
	}
	for k := range repeats {
		m, _ := means[k].(float64)
		r, _ := reds[k].(float64)
		if !(m > 0) || calls[k] != 60.0 || !(r < 1) || (row["strategy"] == "random" && r != 0) {
			t.Errorf("%s, repeat %d: mean %v, calls %v, reduction %v; want a positive mean, 60 calls, a reduction below 1 (0 for random)", what, k+1, means[k], calls[k], reds[k])
		}
	}
}

// TestBenchRemotingStatefulSmoke runs "fulcrum bench remoting --case
// stateful --smoke": two Go replicas on the testbed behind a per-request
// group with a client-activated and a singleton rule, each client's
// calls half on stateful objects; every call is answered, every stateful
// call reached its object's replica (the replicas' own counts agree),
// and each kind has its response times.
func TestBenchRemotingStatefulSmoke(t *testing.T) {
	needTestbed(t)
	t.Parallel()
	raw, _ := benchSmoke(t, "fulcrum bench remoting --case stateful", "remoting", []string{"--case", "stateful"})
	checkRemotingReplica(t, raw, "go")
	var res struct {
		Rows []struct {
			Replicas        int
			Strategy        string
			Calls, Errors   int64
			Misrouted       int64
			CountMismatches int     `json:"count_mismatches"`
			FirstMismatch   string  `json:"first_mismatch"`
			LatencyMeanMS   float64 `json:"latency_mean_ms"`
			Kinds           map[string]struct {
				Calls         int64
				LatencyMeanMS float64 `json:"latency_mean_ms"`
			}
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	var strategies []string
	for _, r := range res.Rows {
		strategies = append(strategies, r.Strategy)
		// Two clients per replica, 15 calls each.
		if r.Replicas != 2 || r.Calls != 60 || r.Errors != 0 || !(r.LatencyMeanMS > 0) {
			t.Errorf("row %s: replicas %d, calls %d, errors %d, mean %v; want 2, 60, 0, a positive mean", r.Strategy, r.Replicas, r.Calls, r.Errors, r.LatencyMeanMS)
		}
		if r.Misrouted != 0 || r.CountMismatches != 0 {
			t.Errorf("row %s: %d calls misrouted, %d count mismatches (%s); want every stateful call on its object's replica", r.Strategy, r.Misrouted, r.CountMismatches, r.FirstMismatch)
		}
		var sum int64
		for _, k := range []string{"single-call", "singleton", "client-activated"} {
			kf := r.Kinds[k]
			sum += kf.Calls
			if kf.Calls == 0 || !(kf.LatencyMeanMS > 0) {
				t.Errorf("row %s: %s calls %d, mean %v; want some, with a positive mean", r.Strategy, k, kf.Calls, kf.LatencyMeanMS)
			}
		}
		if sum != r.Calls {
			t.Errorf("row %s: the kinds add up to %d calls, not %d", r.Strategy, sum, r.Calls)
		}
	}
	if !slices.Equal(strategies, []string{"least-loaded", "random"}) {
		t.Errorf("strategies %v, want least-loaded and random (--smoke)", strategies)
	}
}
