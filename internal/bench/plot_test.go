package bench

import (
	"os"
	"testing"
)

// TestLineChartLogXDegenerate: a log-scale chart with one x value (a grid
// of one caller count, a sweep of one size), or with none at all, is
// written, not a panic that loses the run's results.
func TestLineChartLogXDegenerate(t *testing.T) {
	t.Parallel()
	env := &Env{Dir: t.TempDir()}
	ax := Axes{Title: "t", X: "x", Y: "y", LogX: true}
	cases := map[string][]Line{
		"one-x.png":  {{Name: "a", X: []float64{1}, Y: []float64{120}}, {Name: "b", X: []float64{1}, Y: []float64{190}}},
		"no-x.png":   {{Name: "a", X: []float64{0}, Y: []float64{120}}},
		"empty.png":  nil,
		"normal.png": {{Name: "a", X: []float64{24, 240, 2400}, Y: []float64{120, 124, 136}}},
	}
	for name, lines := range cases {
		if err := env.LineChart(name, ax, lines); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fi, err := os.Stat(env.Path(name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: not written (%v)", name, err)
		}
	}
}
