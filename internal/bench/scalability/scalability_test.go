package scalability

import (
	"math"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

func TestScalabilityRegressionPerConfiguration(t *testing.T) {
	t.Parallel()
	targets := []*scalTarget{{name: bench.ConfigDirect, grid: true}, {name: bench.ConfigHAProxy, grid: true, skipped: "missing"}, {name: bench.ConfigNGINX}}
	var rows []ScalabilityRow
	for _, x := range []int{1, 2, 4} {
		for _, y := range []int{1, 4, 16} {
			r := ScalabilityRow{Part: "grid", Name: bench.ConfigDirect, Processes: x, Callers: y}
			r.Count = 10
			r.Mean = 50 + 3*float64(x) + 5*float64(y) + 7*float64(x*y)
			rows = append(rows, r)
		}
	}
	fits, notes := regressions(rows, targets)
	f, ok := fits[bench.ConfigDirect]
	if !ok {
		t.Fatalf("no fit: %v", notes)
	}
	for i, got := range []float64{f.Beta0, f.Beta1, f.Beta2, f.Beta3, f.R2} {
		if want := []float64{50, 3, 5, 7, 1}[i]; math.Abs(got-want) > 1e-6 {
			t.Errorf("coefficient %d = %v, want %v", i, got, want)
		}
	}
	if _, ok := fits[bench.ConfigHAProxy]; ok || notes[bench.ConfigHAProxy] != "missing" {
		t.Errorf("skipped configuration: fit %v, note %q", fits[bench.ConfigHAProxy], notes[bench.ConfigHAProxy])
	}
	if _, ok := fits[bench.ConfigNGINX]; ok {
		t.Error("nginx is not in the grid, yet fitted")
	}
}

func TestScalabilityCheck(t *testing.T) {
	t.Parallel()
	s := Scalability{Callers: []int{0}}
	if err := s.Check(bench.Quick); err == nil {
		t.Error("0 callers accepted")
	}
	s = Scalability{}
	if err := s.Check(bench.Smoke); err != nil || s.Duration != 0 {
		t.Errorf("Check = %v and changed the flags (%v)", err, s.Duration)
	}
}
