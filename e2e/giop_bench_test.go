//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// runBenchGIOP runs "fulcrum bench NAME --protocol giop --smoke" and
// returns results.json.
func runBenchGIOP(t *testing.T, name string, extra ...string) benchResults {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	args := append([]string{"bench", name, "--protocol", "giop", "--smoke", "--out", out}, extra...)
	code, stdout, stderr := run(testContext(t, 3*time.Minute), t, "fulcrum bench "+name+" --protocol giop", args...)
	if code != 0 {
		t.Fatalf("fulcrum %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
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
		name := row["name"].(string)
		names = append(names, name)
		if name == "haproxy" || name == "nginx" {
			if reason, _ := row["skipped"].(string); !strings.Contains(reason, "HTTP-only") {
				t.Errorf("row %s: skipped = %v, want HTTP-only", name, row["skipped"])
			}
			continue
		}
		checkServed(t, row, 200)
		if v, ok := row["throughput_ratio_to_direct"].(float64); !ok || !(v > 0) {
			t.Errorf("row %s: throughput_ratio_to_direct = %v", name, row["throughput_ratio_to_direct"])
		}
	}
	if want := []string{"direct", "per-session", "per-request", "on-demand", "haproxy", "nginx"}; !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
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
		rates, _ := row["replica_rates"].([]any)
		sum := 0.0
		for _, r := range rates {
			v, _ := r.(float64)
			sum += v
		}
		if len(rates) != 4 || !(sum > 0) {
			t.Errorf("run %v: replica_rates %v, want 4 replicas serving calls", row["name"], row["replica_rates"])
		}
		if row["calls"] == 0.0 || row["errors"] != 0.0 {
			t.Errorf("run %v: calls %v, errors %v", row["name"], row["calls"], row["errors"])
		}
	}
}
