package strategy

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestMinimumDispersionMinGain: inside the tolerance band the group is
// still refined, by a tentative plan, while one lowers the CV by min_gain;
// with min_gain 0, or when no plan gains that much, nothing happens; out
// of the band the plan is made at once (not tentative).
func TestMinimumDispersionMinGain(t *testing.T) {
	t.Parallel()
	c := func(id string, rate float64) protocol.ClientRate { return protocol.ClientRate{ID: id, Rate: rate} }
	// 105 | 95 | 100 (every replica within ±10% of 100, CV 0.041): a swap
	// of x35 and y30 makes 100 each.
	inBand := []LoadState{
		state("a", 105, c("a70", 70), c("x35", 35)),
		state("b", 95, c("b65", 65), c("y30", 30)),
		state("c", 100, c("c60", 60), c("c40", 40)),
	}
	for _, tc := range []struct {
		name      string
		params    map[string]any
		replicas  []LoadState
		moves     int
		tentative bool
	}{
		{"in band: a tentative refinement", nil, inBand, 2, true},
		{"in band, min_gain off", map[string]any{"min_gain": 0}, inBand, 0, false},
		{"in band, gain below min_gain", map[string]any{"min_gain": 0.05}, inBand, 0, false},
		{"pinned clients may be named", nil, []LoadState{
			{ID: "a", Weight: 1, Reported: true, Load: 105, Sample: 105,
				Clients: []protocol.ClientRate{c("a70", 70)}, Pinned: []protocol.ClientRate{c("x35", 35)}},
			state("b", 95, c("b65", 65), c("y30", 30)),
			state("c", 100, c("c60", 60), c("c40", 40)),
		}, 2, true},
		{"out of band: at once", nil, []LoadState{
			state("a", 160, c("a100", 100), c("a60", 60)),
			state("b", 40, c("b40", 40)),
		}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(MinimumDispersionName, tc.params, testEnv(1))
			if err != nil {
				t.Fatal(err)
			}
			d := s.(Adaptive).Analyze(&Analysis{Replicas: tc.replicas})
			if len(d.Moves) != tc.moves || d.Tentative != tc.tentative {
				t.Fatalf("%d moves (tentative %v), want %d (tentative %v): %+v", len(d.Moves), d.Tentative, tc.moves, tc.tentative, d)
			}
			if tc.moves > 0 {
				var loads []float64
				by := map[string]float64{}
				for _, r := range tc.replicas {
					by[r.ID] = r.Load
				}
				for _, mv := range d.Moves {
					by[mv.From] -= mv.Rate
					by[mv.To] += mv.Rate
				}
				for _, r := range tc.replicas {
					loads = append(loads, by[r.ID])
				}
				if cv := CV(loads, nil); cv > 1e-9 {
					t.Errorf("the plan leaves loads %v (CV %.3f), want them equal", loads, cv)
				}
			}
		})
	}
}
