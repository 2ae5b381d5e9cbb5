package scalability

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/benchtest"
)

// TestScalabilitySmoke runs the experiment with real processes — the
// replicas, a balancer, the competitors installed, and for the grid
// "fulcrum bench-client" processes — at --smoke size over two payload
// sizes, and checks what it writes: a row per configuration and cell, each
// served without errors, Little's law's figures on the grid rows, a fit
// per grid configuration, the CSV files, the plots and the report's
// targets.
func TestScalabilitySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 20 s")
	}
	bin := benchtest.Binary(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exp, ok := bench.New("scalability")
	if !ok {
		t.Fatal("scalability is not registered")
	}
	exp.(*Scalability).Sizes = []int{24, 24000}
	o := bench.Options{Out: out, Size: bench.Smoke, Binary: bin, Command: "fulcrum bench scalability --smoke --sizes 24,24000"}
	if testing.Verbose() {
		o.Progress = os.Stderr
	}
	outs, err := bench.Run(ctx, []bench.Experiment{exp}, o)
	if err != nil {
		t.Fatalf("bench: %v (see %s/logs)", err, out)
	}
	if len(outs) != 1 || outs[0].Results == nil {
		t.Fatalf("outcomes %+v", outs)
	}

	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Experiment string                        `json:"experiment"`
		Rows       []map[string]any              `json:"rows"`
		Regression map[string]map[string]float64 `json:"regression"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if res.Experiment != "scalability" {
		t.Errorf("experiment %q", res.Experiment)
	}
	// Payload rows first, size by size in the configurations' order; then
	// the grid, cell by cell ({1,2} processes × {1,4} callers at --smoke),
	// over the grid's configurations.
	payloadCfgs := []string{bench.ConfigDirect, bench.ConfigPerRequest, bench.ConfigOnDemand, bench.ConfigHAProxy, bench.ConfigNGINX}
	gridCfgs := []string{bench.ConfigDirect, bench.ConfigPerRequest, bench.ConfigHAProxy}
	type key struct {
		part, name string
		a, b       float64
	}
	var want []key
	for _, size := range []float64{24, 24000} {
		for _, c := range payloadCfgs {
			want = append(want, key{"payload", c, size, 0})
		}
	}
	for _, x := range []float64{1, 2} {
		for _, y := range []float64{1, 4} {
			for _, c := range gridCfgs {
				want = append(want, key{"grid", c, x, y})
			}
		}
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(want))
	}
	skipped := map[string]bool{}
	for i, row := range res.Rows {
		w := want[i]
		var got key
		got.part, _ = row["part"].(string)
		got.name, _ = row["name"].(string)
		if w.part == "payload" {
			got.a, _ = row["size_bytes"].(float64)
		} else {
			got.a, _ = row["processes"].(float64)
			got.b, _ = row["callers"].(float64)
		}
		if got != w {
			t.Fatalf("row %d is %+v, want %+v", i, got, w)
		}
		what := fmt.Sprintf("%s %s %v/%v", w.part, w.name, w.a, w.b)
		if reason, ok := row["skipped"].(string); ok {
			if os.Getenv("CI") == "true" || !strings.Contains(reason, "apt-get install") {
				t.Errorf("%s skipped: %q (on CI scripts/test.sh installs haproxy and nginx)", what, reason)
			}
			skipped[w.name] = true
			continue
		}
		for _, k := range []string{"latency_mean_us", "latency_p5_us", "latency_p95_us", "throughput_rps"} {
			if v, ok := row[k].(float64); !ok || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s: %s = %v, want a positive number", what, k, row[k])
			}
		}
		if row["errors"] != 0.0 {
			t.Errorf("%s: errors = %v, want 0", what, row["errors"])
		}
		calls, _ := row["calls"].(float64)
		switch w.part {
		case "payload":
			if calls != 20 {
				t.Errorf("%s: %v calls, want the 20 of --smoke", what, calls)
			}
		case "grid":
			if calls < 1 {
				t.Errorf("%s: no calls", what)
			}
			// Little's law: X·Y callers ÷ throughput, in µs.
			pred, _ := row["little_predicted_us"].(float64)
			if wantPred := w.a * w.b / row["throughput_rps"].(float64) * 1e6; math.Abs(pred-wantPred) > 1e-6*wantPred {
				t.Errorf("%s: little_predicted_us %v, want %v", what, pred, wantPred)
			}
			resid, ok := row["little_residual"].(float64)
			if mean := row["latency_mean_us"].(float64); !ok || math.Abs(resid-(mean-pred)/pred) > 1e-9 {
				t.Errorf("%s: little_residual %v, want (mean − predicted) ÷ predicted", what, row["little_residual"])
			}
			if late, ok := row["start_late_ms"].(float64); !ok || late < 0 {
				t.Errorf("%s: start_late_ms %v", what, row["start_late_ms"])
			}
		}
	}
	for _, c := range gridCfgs {
		f, ok := res.Regression[c]
		if skipped[c] {
			if ok {
				t.Errorf("%s was skipped, yet fitted", c)
			}
			continue
		}
		// Four cells, four coefficients: the fit is exact.
		if !ok || math.Abs(f["r2"]-1) > 1e-6 {
			t.Errorf("regression of %s: %v, want an exact fit of the four cells", c, f)
		}
	}
	if _, ok := res.Regression[bench.ConfigOnDemand]; ok {
		t.Error("on-demand is not in the grid, yet fitted")
	}

	for name, rows := range map[string]int{"scalability-payload.csv": 2 * len(payloadCfgs), "scalability-grid.csv": 4 * len(gridCfgs)} {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(recs) != 1+rows {
			t.Errorf("%s: %d records (%v), want a header and %d rows", name, len(recs), err, rows)
		}
	}
	for _, name := range []string{"scalability-payload.png", "scalability-grid.png", "scalability-throughput.png"} {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		f.Close()
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range gridCfgs {
		if skipped[c] {
			continue
		}
		if line := "| Little's law holds for " + c + " (every cell within 10%) |"; !strings.Contains(string(report), line) {
			t.Errorf("report.md has no target %q", line)
		}
	}
}
