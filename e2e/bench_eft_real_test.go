//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchEFTRealWorkflows runs "fulcrum bench eft --smoke" on one small
// setting and checks the real work-flows: every setting ran under both
// placements through the admin API, with measured makespans, and the
// report says so.
func TestBenchEFTRealWorkflows(t *testing.T) {
	t.Parallel()
	raw, out := benchSmoke(t, "fulcrum bench eft", "eft", nil, "--tasks", "25", "--state-groups", "2", "--stateful", "50")
	var res struct {
		Real struct {
			Rows []struct {
				Name         string  `json:"name"`
				Tasks        int     `json:"tasks"`
				Graphs       int     `json:"graphs"`
				EFTMS        float64 `json:"eft_makespan_ms"`
				RoundRobinMS float64 `json:"round_robin_makespan_ms"`
			} `json:"rows"`
			Replicas int `json:"replicas"`
		} `json:"real"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Real.Rows) != 1 || res.Real.Replicas != 3 {
		t.Fatalf("real = %+v, want one setting (stateful 50%%) on 3 replicas", res.Real)
	}
	for _, r := range res.Real.Rows {
		// A work-flow of 12 tasks of at least 1 ms each, some in a chain,
		// takes more than a millisecond under either placement.
		if r.Graphs < 1 || r.Tasks < 1 || r.EFTMS < 1 || r.RoundRobinMS < 1 {
			t.Errorf("real row %+v, want measured makespans of both placements", r)
		}
	}
	rep, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep), "## Real work-flows") || !strings.Contains(string(rep), "placement: round-robin") {
		t.Errorf("report.md has no real work-flows section:\n%s", rep)
	}
}
