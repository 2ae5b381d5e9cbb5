//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint/failpointtest"
)

// The replication bench's targets this test holds it to, as its report
// and results.json name them: fault injection, and replicated callers.
const (
	faultTarget   = "zero client-visible errors and duplicates at the injection points"
	callersTarget = "a deduplicating callee saw each outgoing call exactly once, and the replicated relays' states are equal"
)

// TestBenchReplicationSmoke runs "fulcrum bench replication --smoke" with
// the failpoint binary: rows for the replicated group (2 to 4 replicas,
// plain and protocol-aware clients), direct, per-request and seed 001's
// relay topologies, none with an error; every fault injection point (1–5)
// ran, its failpoint killed its process in every run, and no client saw
// an error; the fault target and the replicated callers' target (a
// deduplicating callee saw each call once) are met. (The bench itself fails on a broken invariant — a counter that is
// not the number of distinct requests, a value two calls got — so an exit
// status 0 says those held.)
func TestBenchReplicationSmoke(t *testing.T) {
	t.Parallel()
	bin := failpointtest.Binary(t)
	res, out := runBenchWith(t, "replication", []string{"--failpoint-binary", bin})

	seen := map[string]bool{}
	for _, row := range res.Rows {
		config, _ := row["config"].(string)
		kind, _ := row["kind"].(string)
		replicas, _ := row["replicas"].(float64)
		seen[fmt.Sprintf("%s/%s/%v", config, kind, replicas)] = true
		if calls, _ := row["calls"].(float64); !(calls > 0) {
			t.Errorf("row %v: calls = %v, want some", row, row["calls"])
		}
		if row["errors"] != 0.0 {
			t.Errorf("row %v: errors = %v, want 0", row, row["errors"])
		}
		if p50, _ := row["rtt_p50_ms"].(float64); !(p50 > 0) {
			t.Errorf("row %v: rtt_p50_ms = %v, want a positive RTT", row, row["rtt_p50_ms"])
		}
	}
	var want []string
	for n := 2; n <= 4; n++ {
		for _, kind := range []string{"plain", "aware"} {
			want = append(want, fmt.Sprintf("replicated/%s/%d", kind, n))
		}
	}
	want = append(want, "direct/plain/1", "per-request/plain/1", "relay→bridge/plain/2", "bridge→relays/aware/2")
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no row for %s (config/kind/replicas); rows: %v", w, res.Rows)
		}
	}

	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var extra struct {
		Faults []struct {
			Point     int    `json:"Point"`
			Failpoint string `json:"Failpoint"`
			Runs      int    `json:"runs"`
			Errors    int    `json:"errors"`
			Killed    int    `json:"killed"`
		} `json:"faults"`
		Targets []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Detail string `json:"detail"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		t.Fatal(err)
	}
	points := map[int]bool{}
	for _, f := range extra.Faults {
		points[f.Point] = true
		if f.Runs < 1 || f.Killed != f.Runs || f.Errors != 0 {
			t.Errorf("fault point %d (%s): %d runs, the failpoint fired in %d, %d client-visible errors; want it fired in every run and no error", f.Point, f.Failpoint, f.Runs, f.Killed, f.Errors)
		}
	}
	for p := 1; p <= 5; p++ {
		if !points[p] {
			t.Errorf("fault point %d not run; faults: %+v", p, extra.Faults)
		}
	}
	for _, name := range []string{faultTarget, callersTarget} {
		found := false
		for _, tg := range extra.Targets {
			if tg.Name == name {
				found = true
				if tg.Status != "met" {
					t.Errorf("target %q: %s (%s), want met", tg.Name, tg.Status, tg.Detail)
				}
			}
		}
		if !found {
			t.Errorf("no target %q in results.json: %+v", name, extra.Targets)
		}
	}
}
