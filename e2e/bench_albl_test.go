//go:build linux

package e2e

import (
	"slices"
	"testing"
)

// TestBenchALBLSmoke runs "fulcrum bench albl --smoke": every scenario on
// the testbed (NGINX replicas in namespaces, one link shaped, one replica
// hogged), every strategy, one rate each; every row has its figures and
// every call of the unshaped scenarios is answered.
func TestBenchALBLSmoke(t *testing.T) {
	needTestbed(t)
	needTool(t, "nginx")
	needTool(t, "nsenter")
	var files []string
	for _, sc := range []string{"I", "II", "III"} {
		for _, f := range []string{"throughput", "latency-mean", "latency-p99", "errors"} {
			files = append(files, "albl-"+sc+"-"+f+".png")
		}
	}
	res, _ := runBench(t, "albl", append(files, "albl.csv")...)
	strategies := []string{"round-robin", "least-connections", "albl-low", "albl-high", "least-loaded",
		"power-of-two", "peak-ewma", "prequal", "weighted-round-robin-orca"}
	seen := map[string]int{}
	for _, row := range res.Rows {
		sc, _ := row["scenario"].(string)
		name, _ := row["name"].(string)
		seen[sc]++
		if !slices.Contains(strategies, name) {
			t.Errorf("row %v: unknown strategy label %q", row, name)
		}
		for _, k := range []string{"rate", "throughput_kbs", "latency_mean_ms", "latency_p99_ms", "sent", "answered"} {
			if v, ok := row[k].(float64); !ok || !(v > 0) {
				t.Errorf("scenario %s %s: %s = %v, want a positive number", sc, name, k, row[k])
			}
		}
		if er, ok := row["error_rate"].(float64); !ok || er < 0 || er > 1 {
			t.Errorf("scenario %s %s: error_rate = %v, want 0..1", sc, name, row["error_rate"])
		}
		if _, ok := row["params"].(map[string]any); !ok {
			t.Errorf("scenario %s %s: params = %v, want an object", sc, name, row["params"])
		}
		// Nothing is congested in scenarios I and III at the smoke's
		// rate: every call is answered.
		if sc != "II" && row["error_rate"] != 0.0 {
			t.Errorf("scenario %s %s: error_rate = %v, want 0 (errors: %v)", sc, name, row["error_rate"], row["errors"])
		}
	}
	for _, sc := range []string{"I", "II", "III"} {
		if seen[sc] != len(strategies) {
			t.Errorf("scenario %s has %d rows, want one per strategy (%d)", sc, seen[sc], len(strategies))
		}
	}
}
