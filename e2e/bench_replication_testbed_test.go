//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// growthTarget is the replication bench's RTT growth target, as its
// report and results.json name it.
const growthTarget = "RTT growth from 2 to 4 replicas ≤ 20% (testbed, 0.25-core replicas)"

// TestBenchReplicationTestbedSmoke runs "fulcrum bench replication
// --testbed --smoke": each replica (counter and agent) in a 0.25-core
// testbed replica, replicas 3 and 4 joining by state transfer through
// the forwarders; rows for the replicated group (2 to 4 replicas, plain
// and protocol-aware), direct and per-request, none with an error, and no
// relay rows (loopback only); the growth target measured (met or missed,
// with the two RTTs), the replicated callers' target not. (The bench
// fails on a broken invariant, so exit status 0 says those held.)
func TestBenchReplicationTestbedSmoke(t *testing.T) {
	needTestbed(t)
	res, out := runBenchWith(t, "replication", []string{"--testbed"})
	seen := map[string]bool{}
	for _, row := range res.Rows {
		config, _ := row["config"].(string)
		kind, _ := row["kind"].(string)
		replicas, _ := row["replicas"].(float64)
		seen[fmt.Sprintf("%s/%s/%v", config, kind, replicas)] = true
		if row["errors"] != 0.0 {
			t.Errorf("row %v: errors = %v, want 0", row, row["errors"])
		}
		if p50, _ := row["rtt_p50_ms"].(float64); !(p50 > 0) {
			t.Errorf("row %v: rtt_p50_ms = %v, want a positive RTT", row, row["rtt_p50_ms"])
		}
	}
	want := []string{"direct/plain/1", "per-request/plain/1"}
	for n := 2; n <= 4; n++ {
		want = append(want, fmt.Sprintf("replicated/plain/%d", n), fmt.Sprintf("replicated/aware/%d", n))
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no row for %s (config/kind/replicas); rows: %v", w, res.Rows)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("rows for %v, want only %v (the relay topologies run on loopback only)", seen, want)
	}

	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var extra struct {
		Targets []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Detail string `json:"detail"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, tg := range extra.Targets {
		status[tg.Name] = tg.Status
		if tg.Name == growthTarget && !strings.Contains(tg.Detail, "→") {
			t.Errorf("target %q: detail %q, want the two RTTs", tg.Name, tg.Detail)
		}
	}
	if s := status[growthTarget]; s != "met" && s != "missed" {
		t.Errorf("target %q: %q, want measured (met or missed); targets: %+v", growthTarget, s, extra.Targets)
	}
	if s := status[callersTarget]; s != "not measured" {
		t.Errorf("target %q: %q, want not measured on the testbed", callersTarget, s)
	}
}
