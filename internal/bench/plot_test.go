package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestPlotFailureIsLoggedNotFatal: a plot that cannot be written is a
// warning in the progress log; the experiment goes on to write its
// results.
func TestPlotFailureIsLoggedNotFatal(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	env := &Env{Dir: filepath.Join(t.TempDir(), "missing"), progress: &log, began: time.Now()}
	lines := []Line{{Name: "a", X: []float64{1, 2}, Y: []float64{3, 4}}}
	if err := env.LineChart("p.png", Axes{Title: "t"}, lines); err != nil {
		t.Fatalf("LineChart into a missing directory = %v, want nil (logged)", err)
	}
	if !strings.Contains(log.String(), "warning: bench: plot p.png") {
		t.Errorf("progress log %q, want a warning naming the plot", log.String())
	}
}
