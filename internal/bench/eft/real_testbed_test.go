package eft

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/benchtest"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// checkSlots leaves slotHeadroom cores outside the slots.
func TestCheckSlots(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		servers int
		cores   float64
		ok      bool
	}{
		{"3 on 2 cores", 3, 2, true},
		{"1 on 1 core", 1, 1, true},
		{"4 on 2 cores", 4, 2, false},
		{"2 on 1 core", 2, 1, false},
		{"8 on 4 cores", 8, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkSlots(tt.servers, tt.cores)
			if tt.ok && err != nil {
				t.Errorf("checkSlots(%d, %g) = %v, want nil", tt.servers, tt.cores, err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "--servers")) {
				t.Errorf("checkSlots(%d, %g) = %v, want an error naming --servers", tt.servers, tt.cores, err)
			}
		})
	}
}

// TestTestbedSmoke runs the experiment with --testbed at --smoke size,
// the simulation cut to one setting, with a real fulcrum binary: the
// real work-flows' replicas run in testbed slots (root). It checks that
// results.json says so, that /count was calibrated in a slot and that
// every real setting has both placements' makespans. It fails when the
// testbed cannot run and CI=true, and skips otherwise.
func TestTestbedSmoke(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes in testbed slots for a few seconds")
	}
	if err := testbed.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("testbed unavailable in CI: %v", err)
		}
		t.Skipf("testbed unavailable: %v", err)
	}
	bin := benchtest.Binary(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, ok := bench.New(Name)
	if !ok {
		t.Fatal("eft is not registered")
	}
	e := exp.(*EFT)
	e.Testbed, e.Graphs, e.Tasks, e.Groups = true, 1, []int{25}, []int{2}
	o := bench.Options{Out: out, Size: bench.Smoke, Binary: bin, Command: "fulcrum bench eft --smoke --testbed --graphs 1 --tasks 25 --state-groups 2"}
	if testing.Verbose() {
		o.Progress = os.Stderr
	}
	outs, err := bench.Run(ctx, []bench.Experiment{exp}, o)
	if err != nil || len(outs) != 1 || outs[0].Results == nil {
		t.Fatalf("bench.Run: %v %+v (see %s/logs)", err, outs, out)
	}
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Real struct {
			Rows        []RealRow `json:"rows"`
			Testbed     bool      `json:"testbed"`
			SlotCPU     float64   `json:"slot_cpu"`
			SlotPeriod  float64   `json:"slot_cpu_period_ms"`
			MSPerMillon float64   `json:"count_ms_per_million"`
		} `json:"real"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	r := res.Real
	if !r.Testbed || r.SlotCPU != slotCPU || r.SlotPeriod != 2.5 {
		t.Errorf("real: testbed %v, slot_cpu %g, slot_cpu_period_ms %g; want true, %g, 2.5", r.Testbed, r.SlotCPU, r.SlotPeriod, slotCPU)
	}
	if !(r.MSPerMillon > 0) {
		t.Errorf("count_ms_per_million %g, want > 0", r.MSPerMillon)
	}
	if len(r.Rows) != len(defaultRatios) {
		t.Fatalf("%d real rows, want %d (one per stateful ratio at --smoke): %+v", len(r.Rows), len(defaultRatios), r.Rows)
	}
	for _, row := range r.Rows {
		if row.Graphs != 1 || !(row.EFTMS > 0) || !(row.RoundRobinMS > 0) {
			t.Errorf("row %+v: want 1 graph and both makespans > 0", row)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "each in a testbed slot of 0.40 cores"; !strings.Contains(string(report), want) {
		t.Errorf("report.md does not say %q", want)
	}
}
