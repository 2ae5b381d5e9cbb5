package bench_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/overhead"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// topKeys returns the members of a JSON object in their order.
func topKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestResultsJSONFollowsTheSchema(t *testing.T) {
	t.Parallel()
	rec := stats.NewRecorder()
	for i := 1; i <= 100; i++ {
		rec.Record(time.Duration(i) * time.Microsecond)
	}
	ratio := 1.0
	res := &bench.Results{
		Experiment: "overhead",
		Command:    "fulcrum bench overhead --quick",
		Started:    time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC),
		Machine:    bench.Machine{CPUs: 2, OS: "linux", Go: "go1.26", HAProxy: "2.6.12", NGINX: ""},
		Rows: []overhead.OverheadRow{{
			Name:    "direct",
			Figures: bench.FiguresOf(bench.LoadResult{Rec: rec, Elapsed: time.Second}),
			Rounds:  5, ThroughputRatio: &ratio, LatencyRatio: &ratio,
		}, {Name: "nginx", Skipped: "nginx is not installed (apt-get install nginx)"}},
		Extra: map[string]any{"regression": map[string]stats.Fit{"direct": {Beta0: 1, R2: 0.5}}, "targets": []bench.Target{}},
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := res.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := topKeys(t, raw), []string{"experiment", "command", "started", "machine", "rows", "regression", "targets"}; !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
	var back struct {
		Started string         `json:"started"`
		Machine map[string]any `json:"machine"`
		Rows    []map[string]any
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Started != "2026-01-02T03:04:05Z" {
		t.Errorf("started %q, want RFC 3339", back.Started)
	}
	for _, k := range []string{"cpus", "os", "go", "haproxy", "nginx"} {
		if _, ok := back.Machine[k]; !ok {
			t.Errorf("machine has no %s", k)
		}
	}
	direct := back.Rows[0]
	for k, want := range map[string]float64{
		"calls": 100, "throughput_rps": 100, "latency_mean_us": 50.5, "latency_p5_us": 5, "latency_p50_us": 50,
		"latency_p95_us": 95, "latency_p99_us": 99, "latency_max_us": 100, "errors": 0,
		"throughput_ratio_to_direct": 1, "latency_ratio_to_direct": 1,
	} {
		if direct[k] != want {
			t.Errorf("direct.%s = %v, want %v", k, direct[k], want)
		}
	}
	if j, _ := direct["jitter_us"].(float64); j < 28.8 || j > 28.9 {
		t.Errorf("jitter_us = %v, want the population standard deviation 28.87", direct["jitter_us"])
	}
	nginx := back.Rows[1]
	if nginx["skipped"] != "nginx is not installed (apt-get install nginx)" || nginx["throughput_ratio_to_direct"] != nil {
		t.Errorf("skipped row %v, want the reason and null ratios", nginx)
	}
}

func TestResultsWithoutRowsHaveAnEmptyList(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(&bench.Results{Experiment: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"rows":[]`) {
		t.Errorf("%s: want \"rows\":[]", raw)
	}
}

func TestReportMarksTargets(t *testing.T) {
	t.Parallel()
	rep := bench.NewReport("fulcrum bench x")
	rep.Target("fast enough", true, "ratio %.2f", 0.99)
	rep.Target("small enough", false, "%d µs", 12)
	rep.TargetUnknown("beats HAProxy", "haproxy is not installed")
	rep.Table([]string{"a", "b"}, [][]string{{"1", "2"}})
	md := rep.Markdown(&bench.Results{Command: "fulcrum bench x --quick", Machine: bench.Machine{CPUs: 2}})
	for _, want := range []string{
		"# fulcrum bench x", "`fulcrum bench x --quick`", "HAProxy not installed",
		"| fast enough | **met** | ratio 0.99 |", "| small enough | **missed** | 12 µs |",
		"| beats HAProxy | not measured | haproxy is not installed |", "| a | b |\n|---|---|\n| 1 | 2 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if got := len(rep.Targets()); got != 3 {
		t.Errorf("%d targets, want 3", got)
	}
}
