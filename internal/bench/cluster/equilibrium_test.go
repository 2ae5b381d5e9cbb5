package cluster

import (
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/effectiveness"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// effTarget judges the three-instance run's equilibrium (under the
// band the mix allows) against 10 s, and a run under 20 s not at all.
func TestEffTarget(t *testing.T) {
	t.Parallel()
	sec := func(s int) *int { return &s }
	run := func(cfg string, dur int, eq *int, band float64) EffRun {
		return EffRun{Config: cfg, Run: effectiveness.EffRow{DurationS: dur, EquilibriumS: eq, TargetEquilibriumS: eq, TargetBand: band}}
	}
	for _, tc := range []struct {
		name   string
		runs   []EffRun
		want   bench.TargetStatus
		detail string
	}{
		{"met", []EffRun{run(cfgOne, 60, sec(3), stats.DefaultBand), run(cfgThree, 60, sec(4), stats.DefaultBand)}, bench.Met, "equilibrium 4 s"},
		{"at the limit", []EffRun{run(cfgThree, 60, sec(10), stats.DefaultBand)}, bench.Met, "equilibrium 10 s"},
		{"late", []EffRun{run(cfgOne, 60, sec(3), stats.DefaultBand), run(cfgThree, 60, sec(11), stats.DefaultBand)}, bench.Missed, "one instance: equilibrium 3 s"},
		{"never", []EffRun{run(cfgThree, 60, nil, stats.DefaultBand)}, bench.Missed, "equilibrium never"},
		{"wider band", []EffRun{run(cfgThree, 60, sec(2), 0.14)}, bench.Met, "±14%"},
		{"too short", []EffRun{run(cfgThree, 19, sec(2), stats.DefaultBand)}, bench.Unknown, "too short"},
		{"no run", nil, bench.Unknown, "not measured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, detail := effTarget(tc.runs)
			if got != tc.want || !strings.Contains(detail, tc.detail) {
				t.Errorf("effTarget = %s, %q; want %s, containing %q", got, detail, tc.want, tc.detail)
			}
		})
	}
}
