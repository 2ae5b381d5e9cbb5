package eft

import (
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// TestSmoke runs the experiment at --smoke size (one graph per setting)
// through bench.Run and checks what it writes: a row per setting of Table
// I with sane normalised makespans, a target per setting of the paper's
// two ratios, the figures and the report.
func TestSmoke(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exp, ok := bench.New(Name)
	if !ok {
		t.Fatal("eft is not registered")
	}
	// One graph per setting: the race detector slows the simulation about
	// twentyfold, and every setting still runs.
	exp.(*EFT).Graphs = 1
	outs, err := bench.Run(ctx, []bench.Experiment{exp}, bench.Options{Out: out, Size: bench.Smoke, Command: "fulcrum bench eft --smoke --graphs 1"})
	if err != nil || len(outs) != 1 || outs[0].Results == nil {
		t.Fatalf("bench.Run: %v %+v", err, outs)
	}
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Experiment string         `json:"experiment"`
		Rows       []Row          `json:"rows"`
		Targets    []bench.Target `json:"targets"`
		Simulation map[string]any `json:"simulation"`
		Machine    map[string]any `json:"machine"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	settings := len(defaultTasks) * len(defaultGroups) * len(defaultRatios)
	if res.Experiment != Name || len(res.Rows) != settings || len(res.Targets) != settings {
		t.Fatalf("experiment %q, %d rows, %d targets; want eft, %d and %d", res.Experiment, len(res.Rows), len(res.Targets), settings, settings)
	}
	for _, r := range res.Rows {
		if r.Graphs != 1 {
			t.Errorf("%s: %d graphs, want 1", r.Name, r.Graphs)
		}
		// Every makespan is at least the lower bound; the bars are over
		// round-robin's.
		for name, m := range map[string]float64{"eft": r.EFTMS, "ett": r.ETTMS, "round-robin": r.RoundRobinMS} {
			if !(m >= r.BoundMS*(1-1e-9)) || r.BoundMS <= 0 {
				t.Errorf("%s: %s makespan %v below the lower bound %v", r.Name, name, m, r.BoundMS)
			}
		}
		if d := r.EFTNorm - r.EFTMS/r.RoundRobinMS; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s: EFT normalised %v, want %v", r.Name, r.EFTNorm, r.EFTMS/r.RoundRobinMS)
		}
		if r.Met == nil || r.TargetVsRR == 0 || r.TargetVsETT == 0 {
			t.Errorf("%s: no target", r.Name)
		}
	}
	for _, fig := range []string{"fig17-2groups.png", "fig17-8groups.png", "fig18-4groups.png"} {
		f, err := os.Open(filepath.Join(out, fig))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", fig, err)
		}
		f.Close()
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Targets", "Chen et al.", "fig17-2groups.png", "fig18-8groups.png", "stateful 50%, 8 groups, v=400"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// A run's figures depend on the seed alone, not on the workers' timing.
func TestSimulationIsReproducible(t *testing.T) {
	t.Parallel()
	settings := []setting{{ratio: 0.5, groups: 4, tasks: 50}, {ratio: 0.25, groups: 2, tasks: 25}}
	e := &EFT{Graphs: 4, Seed: 9, Servers: 3, K: 2}
	a, err := e.simulate(context.Background(), settings)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.simulate(context.Background(), settings)
	if err != nil {
		t.Fatal(err)
	}
	for si := range settings {
		for gi := range a[si] {
			if a[si][gi] != b[si][gi] {
				t.Errorf("setting %d graph %d: %+v then %+v", si, gi, a[si][gi], b[si][gi])
			}
		}
	}
	e.Seed = 10
	c, _ := e.simulate(context.Background(), settings)
	if c[0][0] == a[0][0] {
		t.Error("another seed, the same graph")
	}
}

func TestCheckRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    EFT
		want string
	}{
		{"graphs", EFT{Graphs: -1}, "--graphs -1"},
		{"servers", EFT{Servers: -2}, "--servers -2"},
		{"k", EFT{K: -1}, "--k -1"},
		{"tasks", EFT{Tasks: []int{10001}}, "--tasks 10001"},
		{"stateful", EFT{statefulPct: []int{150}}, "--stateful 150"},
		{"ratio", EFT{Ratios: []float64{1.5}}, "ratio 1.5"},
		{"groups", EFT{Groups: []int{0}}, "--state-groups 0"},
		{"testbed servers", EFT{Testbed: true, Servers: 1000}, "--servers 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.e.Check(bench.Smoke)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check = %v, want an error naming %q", err, tt.want)
			}
		})
	}
	var ok EFT
	if err := ok.Check(bench.Full); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}
