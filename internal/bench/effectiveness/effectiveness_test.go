package effectiveness

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/benchtest"
)

func TestEffectivenessSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 20 s")
	}
	bin := benchtest.Binary(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exp, ok := bench.New(EffectivenessName)
	if !ok {
		t.Fatal("effectiveness is not registered")
	}
	o := bench.Options{Out: out, Size: bench.Smoke, Binary: bin, Command: "fulcrum bench effectiveness --smoke"}
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
		Experiment string           `json:"experiment"`
		Command    string           `json:"command"`
		Started    string           `json:"started"`
		Machine    map[string]any   `json:"machine"`
		Rows       []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if res.Experiment != "effectiveness" || res.Command == "" {
		t.Errorf("experiment %q command %q", res.Experiment, res.Command)
	}
	if _, err := time.Parse(time.RFC3339, res.Started); err != nil {
		t.Errorf("started %q: %v", res.Started, err)
	}
	for _, k := range []string{"cpus", "os", "go", "haproxy", "nginx"} {
		if _, ok := res.Machine[k]; !ok {
			t.Errorf("machine lacks %q", k)
		}
	}
	if len(res.Rows) != len(defaultEffRuns) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(defaultEffRuns))
	}
	numbers := []string{"steady_cv", "optimal_cv", "rebinds_per_s", "calls", "errors", "throughput_rps",
		"latency_mean_us", "latency_p5_us", "latency_p50_us", "latency_p95_us", "latency_p99_us", "latency_max_us", "jitter_us"}
	for i, row := range res.Rows {
		name := defaultEffRuns[i]
		strat, binding, _ := strings.Cut(name, "/")
		if row["name"] != name || row["strategy"] != strat || row["binding"] != binding {
			t.Errorf("row %d is %v/%v, want %s", i, row["strategy"], row["binding"], name)
		}
		for _, k := range numbers {
			if _, ok := row[k].(float64); !ok {
				t.Errorf("%s: %s = %v, want a number", name, k, row[k])
			}
		}
		// equilibrium_s is present: a number, or null when never reached.
		if eq, ok := row["equilibrium_s"]; !ok {
			t.Errorf("%s: no equilibrium_s", name)
		} else if _, isNum := eq.(float64); eq != nil && !isNum {
			t.Errorf("%s: equilibrium_s = %v", name, eq)
		}
		rates, _ := row["replica_rates"].([]any)
		if len(rates) != 4 {
			t.Fatalf("%s: replica_rates %v, want 4", name, row["replica_rates"])
		}
		// Each configuration served its calls: about the 1600 the smoke
		// run's clients send, nearly all answered, each by one of the
		// group's replicas.
		calls, errs := row["calls"].(float64), row["errors"].(float64)
		if calls < 1500 || errs > calls/100 {
			t.Errorf("%s: %v calls, %v errors", name, calls, errs)
		}

		slug := strat + "-" + binding
		f, err := os.Open(filepath.Join(out, "rates-"+slug+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(recs) != 1+3 || len(recs[0]) != 1+4+2 || !slices.Equal(recs[0][5:], []string{"failed", "rebinds"}) {
			t.Fatalf("%s: CSV %v (%v)", name, recs, err)
		}
		// Every successful call is in the CSV, under a replica of the
		// group (calls count in the second they were sent).
		inCSV := 0
		for _, rec := range recs[1:] {
			for _, cell := range rec[1:5] {
				n, err := strconv.Atoi(cell)
				if err != nil {
					t.Fatalf("%s: CSV cell %q", name, cell)
				}
				inCSV += n
			}
		}
		if float64(inCSV) != calls {
			t.Errorf("%s: the CSV counts %d calls served by the replicas, results.json %v", name, inCSV, calls)
		}
		pf, err := os.Open(filepath.Join(out, "rates-"+slug+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(pf); err != nil {
			t.Errorf("%s: plot: %v", name, err)
		}
		pf.Close()
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range defaultEffRuns {
		if !strings.Contains(string(report), "| "+want+" |") {
			t.Errorf("report.md has no row for %s", want)
		}
	}
}

func TestEffectivenessFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		set     func(x *Effectiveness)
		wantErr string
	}{
		{"defaults", func(*Effectiveness) {}, ""},
		{"no replicas", func(x *Effectiveness) { x.Replicas = 0 }, "--replicas"},
		{"zero rate", func(x *Effectiveness) { x.Rates = []float64{100, 0} }, "--rates"},
		{"no rates", func(x *Effectiveness) { x.Rates = nil }, "--rates"},
		{"unknown strategy", func(x *Effectiveness) { x.Runs = []string{"fastest/on-demand"} }, "--runs"},
		{"unknown binding", func(x *Effectiveness) { x.Runs = []string{"least-loaded/sticky"} }, "--runs"},
		{"no slash", func(x *Effectiveness) { x.Runs = []string{"least-loaded"} }, "--runs"},
		{"twice", func(x *Effectiveness) { x.Runs = []string{"least-loaded/on-demand", "least-loaded/on-demand"} }, "--runs"},
		{"negative duration", func(x *Effectiveness) { x.Duration = -time.Second }, "--duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := newEffectiveness()
			tt.set(x)
			_, err := x.validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("validate = %v, want an error about %s", err, tt.wantErr)
			}
		})
	}
}

func TestInterleave(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want []float64 }{
		{[]float64{100, 100, 100, 100, 50, 50, 50, 50}, []float64{100, 50, 100, 50, 100, 50, 100, 50}},
		{[]float64{1, 2, 3, 4, 5}, []float64{1, 4, 2, 5, 3}},
		{[]float64{7}, []float64{7}},
		{nil, []float64{}},
	}
	for _, tt := range tests {
		if got := interleave(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("interleave(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestRateListFlag(t *testing.T) {
	t.Parallel()
	x := newEffectiveness()
	fs := pflag.NewFlagSet("effectiveness", pflag.ContinueOnError)
	x.AddFlags(fs)
	if got := fs.Lookup("rates").DefValue; got != "100,100,100,100,50,50,50,50" {
		t.Errorf("default shown as %q", got)
	}
	if err := fs.Parse([]string{"--rates", "300, 50,12.5", "--replicas", "3"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x.Rates, []float64{300, 50, 12.5}) || x.Replicas != 3 {
		t.Errorf("rates %v replicas %d", x.Rates, x.Replicas)
	}
	if err := fs.Parse([]string{"--rates", "100,fast"}); err == nil {
		t.Error("accepted a rate that is not a number")
	}
}
