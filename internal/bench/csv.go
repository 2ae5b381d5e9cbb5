package bench

import (
	"encoding/csv"
	"os"
	"strconv"
)

// WriteCSV writes a CSV file into the output directory: a header line,
// then rows.
func (e *Env) WriteCSV(name string, header []string, rows [][]string) error {
	f, err := os.Create(e.Path(name))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows) // flushes
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// FiguresHeader is the CSV header of Figures, in FiguresCSV's order.
var FiguresHeader = []string{
	"calls", "errors", "throughput_rps", "latency_mean_us", "latency_p5_us", "latency_p50_us",
	"latency_p95_us", "latency_p99_us", "latency_max_us", "jitter_us",
}

// CSV returns the figures as CSV fields, in FiguresHeader's order.
func (f Figures) CSV() []string {
	return []string{
		strconv.FormatInt(f.Count, 10), strconv.FormatInt(f.Errors, 10), Num(f.ThroughputRPS, 1),
		Num(f.Mean, 1), Num(f.P5, 1), Num(f.P50, 1), Num(f.P95, 1), Num(f.P99, 1), Num(f.Max, 1), Num(f.Jitter, 1),
	}
}

// Num formats x with prec decimals.
func Num(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
