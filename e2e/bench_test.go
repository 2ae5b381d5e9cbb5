//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchResults is results.json as other tools read it.
type benchResults struct {
	Experiment string `json:"experiment"`
	Command    string `json:"command"`
	Started    string `json:"started"`
	Machine    struct {
		CPUs    int     `json:"cpus"`
		OS      string  `json:"os"`
		Go      string  `json:"go"`
		HAProxy *string `json:"haproxy"`
		NGINX   *string `json:"nginx"`
	} `json:"machine"`
	Rows       []map[string]any          `json:"rows"`
	Regression map[string]map[string]any `json:"regression"`
}

// latencyFields are the figures every measured row carries.
var latencyFields = []string{
	"calls", "throughput_rps", "latency_mean_us", "latency_p5_us", "latency_p50_us",
	"latency_p95_us", "latency_p99_us", "latency_max_us", "jitter_us",
}

// runBench runs "fulcrum bench NAME --smoke" into a fresh directory, checks
// that it exits 0 and wrote its files, and returns results.json.
func runBench(t *testing.T, name string, files ...string) (benchResults, string) {
	t.Helper()
	return runBenchWith(t, name, nil, files...)
}

// runBenchWith is runBench with extra flags after "--smoke --out DIR".
func runBenchWith(t *testing.T, name string, extra []string, files ...string) (benchResults, string) {
	t.Helper()
	raw, out := benchSmoke(t, "fulcrum bench "+name, name, nil, extra...)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatalf("results.json is not a JSON object: %v", err)
	}
	for _, k := range []string{"experiment", "command", "started", "machine", "rows"} {
		if _, ok := top[k]; !ok {
			t.Errorf("results.json has no %q", k)
		}
	}
	var res benchResults
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if res.Experiment != name {
		t.Errorf("experiment = %q, want %q", res.Experiment, name)
	}
	if !strings.HasPrefix(res.Command, "fulcrum bench "+name) || !strings.Contains(res.Command, "--smoke") {
		t.Errorf("command = %q, want the command line as typed", res.Command)
	}
	if _, err := time.Parse(time.RFC3339, res.Started); err != nil {
		t.Errorf("started = %q: %v", res.Started, err)
	}
	m := res.Machine
	if m.CPUs < 1 || m.OS == "" || !strings.HasPrefix(m.Go, "go") || m.HAProxy == nil || m.NGINX == nil {
		t.Errorf("machine = %+v, want cpus, os, go, haproxy and nginx", m)
	}
	for _, f := range append([]string{"report.md"}, files...) {
		b, err := os.ReadFile(filepath.Join(out, f))
		switch {
		case err != nil:
			t.Errorf("%s: %v", f, err)
		case strings.HasSuffix(f, ".png") && !bytes.HasPrefix(b, []byte("\x89PNG")):
			t.Errorf("%s is not a PNG", f)
		case len(b) == 0:
			t.Errorf("%s is empty", f)
		}
	}
	return res, out
}

// benchSmoke runs "fulcrum bench NAME FLAGS... --smoke --out DIR
// EXTRA..." into a fresh directory DIR (label names the command in
// messages), fails the test unless it exits 0, and returns results.json
// and DIR.
func benchSmoke(t *testing.T, label, name string, flags []string, extra ...string) ([]byte, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	args := append(append([]string{"bench", name}, flags...), "--smoke", "--out", out)
	args = append(args, extra...)
	code, stdout, stderr := run(testContext(t, 3*time.Minute), t, label, args...)
	if code != 0 {
		t.Fatalf("fulcrum %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return raw, out
}

// checkServed checks that a row's configuration served its calls, or was
// skipped for a missing competitor, which fails the test on CI.
func checkServed(t *testing.T, row map[string]any, wantCalls float64) {
	t.Helper()
	what := fmt.Sprintf("row %v", row["name"])
	for _, k := range []string{"part", "size_bytes", "processes", "callers"} {
		if v, ok := row[k]; ok {
			what += fmt.Sprintf(" %s=%v", k, v)
		}
	}
	if reason, ok := row["skipped"].(string); ok {
		if os.Getenv("CI") == "true" {
			t.Errorf("%s skipped on CI (%s); scripts/test.sh installs haproxy and nginx", what, reason)
		} else if !strings.Contains(reason, "apt-get install") {
			t.Errorf("%s skipped without saying how to install: %q", what, reason)
		}
		return
	}
	for _, k := range latencyFields {
		v, ok := row[k].(float64)
		if !ok || !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s: %s = %v, want a positive number", what, k, row[k])
		}
	}
	if wantCalls > 0 && row["calls"] != wantCalls {
		t.Errorf("%s: calls = %v, want %v", what, row["calls"], wantCalls)
	}
	if row["errors"] != 0.0 {
		t.Errorf("%s: errors = %v, want 0", what, row["errors"])
	}
}

func TestBenchOverheadSmoke(t *testing.T) {
	t.Parallel()
	res, _ := runBench(t, "overhead", "overhead.csv", "overhead-rounds.csv", "overhead-latency.png", "overhead-throughput.png")
	var names []string
	for _, row := range res.Rows {
		names = append(names, row["name"].(string))
		checkServed(t, row, 200)
		if _, skipped := row["skipped"]; skipped {
			continue
		}
		for _, k := range []string{"throughput_ratio_to_direct", "latency_ratio_to_direct"} {
			if v, ok := row[k].(float64); !ok || !(v > 0) {
				t.Errorf("row %v: %s = %v, want a positive ratio", row["name"], k, row[k])
			}
		}
		if row["name"] == "direct" && (row["throughput_ratio_to_direct"] != 1.0 || row["latency_ratio_to_direct"] != 1.0) {
			t.Errorf("direct's ratios to itself are %v and %v, want 1", row["throughput_ratio_to_direct"], row["latency_ratio_to_direct"])
		}
	}
	want := []string{"direct", "per-session", "per-request", "on-demand", "haproxy", "nginx"}
	if !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
}

func TestBenchScalabilitySmoke(t *testing.T) {
	t.Parallel()
	res, _ := runBench(t, "scalability", "scalability-payload.csv", "scalability-grid.csv",
		"scalability-payload.png", "scalability-grid.png", "scalability-throughput.png")
	payload := map[string][]float64{}
	grid := map[string][]string{}
	for _, row := range res.Rows {
		name, _ := row["name"].(string)
		switch row["part"] {
		case "payload":
			checkServed(t, row, 20)
			payload[name] = append(payload[name], row["size_bytes"].(float64))
		case "grid":
			checkServed(t, row, 0)
			grid[name] = append(grid[name], fmt.Sprintf("%v×%v", row["processes"], row["callers"]))
			if _, skipped := row["skipped"]; !skipped {
				if v, ok := row["little_predicted_us"].(float64); !ok || !(v > 0) {
					t.Errorf("grid row %v: little_predicted_us = %v", name, row["little_predicted_us"])
				}
			}
		default:
			t.Errorf("row with part %v", row["part"])
		}
	}
	for _, name := range []string{"direct", "per-request", "on-demand", "haproxy", "nginx"} {
		if !slices.Equal(payload[name], []float64{24, 240, 2400, 24000, 240000}) {
			t.Errorf("payload sizes of %s: %v", name, payload[name])
		}
	}
	for _, name := range []string{"direct", "per-request", "haproxy"} {
		if !slices.Equal(grid[name], []string{"1×1", "1×4", "2×1", "2×4"}) {
			t.Errorf("grid cells of %s: %v", name, grid[name])
		}
		fit, ok := res.Regression[name]
		if !ok {
			if os.Getenv("CI") == "true" || name != "haproxy" {
				t.Errorf("no regression for %s: %v", name, res.Regression)
			}
			continue
		}
		for _, k := range []string{"beta0", "beta1", "beta2", "beta3", "r2"} {
			if v, ok := fit[k].(float64); !ok || math.IsNaN(v) {
				t.Errorf("regression %s.%s = %v", name, k, fit[k])
			}
		}
	}
	if len(grid) != 3 {
		t.Errorf("grid configurations %v, want direct, per-request and haproxy", grid)
	}
}

// The command line explains itself and refuses what it cannot run.
func TestBenchUsage(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, time.Minute)
	code, stdout, _ := run(ctx, t, "fulcrum bench --help", "bench", "--help")
	if code != 0 {
		t.Fatalf("bench --help exited %d", code)
	}
	for _, name := range []string{"overhead", "scalability", "all", "--quick", "--smoke", "--out"} {
		if !strings.Contains(stdout, name) {
			t.Errorf("bench --help does not mention %s:\n%s", name, stdout)
		}
	}
	for _, args := range [][]string{
		{"bench", "nonesuch"},
		{"bench", "scalability", "--protocol", "giop", "--out", t.TempDir()},
		{"bench", "overhead", "--protocol", "tcp", "--out", t.TempDir()},
		{"bench", "overhead", "--quick", "--smoke", "--out", t.TempDir()},
		{"bench", "overhead", "--rounds", "2", "--smoke", "--out", t.TempDir()},
	} {
		code, _, stderr := run(ctx, t, "fulcrum "+strings.Join(args, " "), args...)
		if code != 2 {
			t.Errorf("fulcrum %s exited %d, want 2; stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
	}
}
