package effectiveness

import (
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// rateTable is a run's trace as CSV records: a header, then one row per
// second with each replica's served calls, the failed calls and the
// binding changes.
func rateTable(tr effTrace) [][]string {
	header := []string{"second"}
	for _, id := range tr.Replicas {
		header = append(header, id)
	}
	header = append(header, "failed", "rebinds")
	rows := [][]string{header}
	for sec, served := range tr.Served {
		row := []string{strconv.Itoa(sec)}
		for _, n := range served {
			row = append(row, strconv.FormatFloat(n, 'f', -1, 64))
		}
		row = append(row, strconv.Itoa(tr.Failed[sec]), strconv.Itoa(tr.Rebinds[sec]))
		rows = append(rows, row)
	}
	return rows
}

// ratePlot draws a run like the TAO paper's Fig. 16: each replica's served
// rate against time, one line per replica, with the mean rate dashed and
// the start of equilibrium marked when there was one.
func ratePlot(title string, tr effTrace, f effFigures) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "calls/s served"
	p.Y.Min = 0
	p.Legend.Top = true
	var lines []any
	top := 0.0
	for i, id := range tr.Replicas {
		pts := make(plotter.XYs, len(tr.Served))
		for sec, served := range tr.Served {
			pts[sec] = plotter.XY{X: float64(sec) + 0.5, Y: served[i]}
			top = max(top, served[i])
		}
		lines = append(lines, fmt.Sprintf("replica %d (%s)", i+1, id), pts)
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return nil, err
	}
	if len(tr.Served) > 0 {
		mean := 0.0
		for _, r := range f.ReplicaRates {
			mean += r / float64(len(f.ReplicaRates))
		}
		if err := addDashed(p, "steady mean", plotter.XYs{{X: 0, Y: mean}, {X: float64(len(tr.Served)), Y: mean}}); err != nil {
			return nil, err
		}
	}
	if f.Equilibrium >= 0 {
		x := float64(f.Equilibrium)
		if err := addDashed(p, fmt.Sprintf("equilibrium at %d s", f.Equilibrium), plotter.XYs{{X: x, Y: 0}, {X: x, Y: max(top, 1)}}); err != nil {
			return nil, err
		}
	}
	p.Y.Max = max(top*1.15, 1)
	return p, nil
}

func addDashed(p *plot.Plot, name string, pts plotter.XYs) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = color.Gray{Y: 110}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
