package bench

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one named set of values of a bar chart, one per category.
type Series struct {
	Name   string
	Values []float64
}

// Line is one line of a line chart. Lower and Upper, when set, are drawn
// as error bars (Beekhuis's 5%/95% bounds).
type Line struct {
	Name         string
	X, Y         []float64
	Lower, Upper []float64
}

// Axes describe a chart's title and axes.
type Axes struct {
	Title, X, Y string
	// LogX draws the x axis on a log scale (payload sizes).
	LogX bool
}

// The size of every plot.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// BarChart writes a grouped bar chart as a PNG into the output
// directory: one group per category, one bar per series.
func (e *Env) BarChart(name string, ax Axes, categories []string, series []Series) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = ax.Title, ax.X, ax.Y
	p.Y.Min = 0
	w := vg.Points(60 / float64(max(len(series), 1)))
	for i, s := range series {
		vals := make(plotter.Values, len(categories))
		for j := range vals {
			if j < len(s.Values) && finite(s.Values[j]) {
				vals[j] = s.Values[j]
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("bench: plot %s: %w", name, err)
		}
		bars.LineStyle.Width = vg.Length(0)
		bars.Color = plotutil.Color(i)
		bars.Offset = vg.Length(float64(i)-float64(len(series)-1)/2) * w
		p.Add(bars)
		p.Legend.Add(s.Name, bars)
	}
	p.Legend.Top = true
	p.NominalX(categories...)
	return e.SavePlot(p, name)
}

// LineChart writes a line chart with points as a PNG into the output
// directory.
func (e *Env) LineChart(name string, ax Axes, lines []Line) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = ax.Title, ax.X, ax.Y
	if ax.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	for i, l := range lines {
		xys := make(plotter.XYs, 0, len(l.X))
		var errs plotter.YErrors
		for j := range l.X {
			if j >= len(l.Y) || !finite(l.X[j]) || !finite(l.Y[j]) || (ax.LogX && l.X[j] <= 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: l.X[j], Y: l.Y[j]})
			if l.Lower != nil && l.Upper != nil {
				errs = append(errs, struct{ Low, High float64 }{l.Y[j] - l.Lower[j], l.Upper[j] - l.Y[j]})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("bench: plot %s: %w", name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(l.Name, line, points)
		if errs != nil {
			bars, err := plotter.NewYErrorBars(errorPoints{xys, errs})
			if err == nil {
				bars.Color = plotutil.Color(i)
				p.Add(bars)
			}
		}
	}
	p.Legend.Top = true
	p.Legend.Left = true
	if ax.LogX {
		logRange(&p.X)
	}
	return e.SavePlot(p, name)
}

// logRange makes a log axis's range drawable: a single value (one grid
// size, one payload) or no value at all would leave gonum/plot a range
// that reaches 0, which a log scale cannot draw.
func logRange(a *plot.Axis) {
	switch {
	case a.Min > 0 && a.Max > a.Min:
	case a.Min > 0 && a.Min == a.Max:
		a.Min, a.Max = a.Min/2, a.Max*2
	default:
		a.Min, a.Max = 1, 10
	}
}

// SavePlot writes p as the PNG name in the output directory. A plot that
// cannot be drawn is logged, not returned: the run's figures are in
// results.json and report.md, and a picture must not lose them.
func (e *Env) SavePlot(p *plot.Plot, name string) error {
	if err := save(p, name, e.Path(name)); err != nil {
		e.Logf("warning: %v (not written; the figures are in results.json)", err)
	}
	return nil
}

// save writes p as a PNG to path. gonum/plot reports some ranges it cannot
// draw by panicking; that is returned as an error, so a plot never takes
// the bench's results with it.
func save(p *plot.Plot, name, path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bench: plot %s: %v", name, r)
		}
	}()
	if err := p.Save(plotWidth, plotHeight, path); err != nil {
		return fmt.Errorf("bench: plot %s: %w", name, err)
	}
	return nil
}

// errorPoints are points with y error bars.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
