//go:build linux

package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// runBenchGIOP runs "fulcrum bench NAME --protocol giop --smoke" and
// returns results.json.
func runBenchGIOP(t *testing.T, name string, extra ...string) benchResults {
	t.Helper()
	raw, _ := benchSmoke(t, "fulcrum bench "+name+" --protocol giop", name, []string{"--protocol", "giop"}, extra...)
	var res benchResults
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if res.Experiment != name || !strings.Contains(res.Command, "--protocol giop") {
		t.Errorf("results.json: experiment %q, command %q", res.Experiment, res.Command)
	}
	return res
}

// The overhead experiment over GIOP: direct, per-session, per-request and
// on-demand serve every call; HAProxy and NGINX rows are skipped as
// HTTP-only.
func TestBenchOverheadGIOPSmoke(t *testing.T) {
	t.Parallel()
	res := runBenchGIOP(t, "overhead")
	var names []string
	for _, row := range res.Rows {
		names = append(names, checkOverheadRowGIOP(t, row))
	}
	if want := []string{"direct", "per-session", "per-request", "on-demand", "haproxy", "nginx"}; !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
}

// checkOverheadRowGIOP checks a row of the overhead experiment over GIOP
// and returns its name: HAProxy and NGINX are skipped as HTTP-only, the
// others serve their 200 calls at a positive throughput ratio to direct.
func checkOverheadRowGIOP(t *testing.T, row map[string]any) string {
	t.Helper()
	name := row["name"].(string)
	if name == "haproxy" || name == "nginx" {
		if reason, _ := row["skipped"].(string); !strings.Contains(reason, "HTTP-only") {
			t.Errorf("row %s: skipped = %v, want HTTP-only", name, row["skipped"])
		}
		return name
	}
	checkServed(t, row, 200)
	if v, ok := row["throughput_ratio_to_direct"].(float64); !ok || !(v > 0) {
		t.Errorf("row %s: throughput_ratio_to_direct = %v", name, row["throughput_ratio_to_direct"])
	}
	return name
}

// The effectiveness experiment over GIOP: every run serves its calls and
// counts them for the group's replicas.
func TestBenchEffectivenessGIOPSmoke(t *testing.T) {
	t.Parallel()
	res := runBenchGIOP(t, "effectiveness")
	if len(res.Rows) != 4 {
		t.Fatalf("%d runs, want the 4 default strategy/binding pairs", len(res.Rows))
	}
	for _, row := range res.Rows {
		checkReplicaRates(t, row)
		if row["calls"] == 0.0 || row["errors"] != 0.0 {
			t.Errorf("run %v: calls %v, errors %v", row["name"], row["calls"], row["errors"])
		}
	}
}

// checkReplicaRates checks that an effectiveness run's calls were served
// by the group's 4 replicas.
func checkReplicaRates(t *testing.T, row map[string]any) {
	t.Helper()
	rates, _ := row["replica_rates"].([]any)
	sum := 0.0
	for _, r := range rates {
		v, _ := r.(float64)
		sum += v
	}
	if len(rates) != 4 || !(sum > 0) {
		t.Errorf("run %v: replica_rates %v, want 4 replicas serving calls", row["name"], row["replica_rates"])
	}
}
