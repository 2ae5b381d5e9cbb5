package tcp

import (
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/benchtest"
)

// TestTCPSmoke runs the experiment at --smoke size with real processes —
// two echo replicas, fulcrum, HAProxy and NGINX — and checks what it
// writes: a row per part, arm and connection count in order, each arm
// measured with no failed operation (none skipped on CI, where
// scripts/test.sh installs the competitors), the balancers' memory with
// about two descriptors per idle connection, the ratios against HAProxy,
// the plots and the report's targets.
func TestTCPSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 10 s")
	}
	bin := benchtest.Binary(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, ok := bench.New(Name)
	if !ok {
		t.Fatal("tcp is not registered")
	}
	o := bench.Options{Out: out, Size: bench.Smoke, Binary: bin, Command: "fulcrum bench tcp --smoke"}
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
		Experiment string         `json:"experiment"`
		Rows       []Row          `json:"rows"`
		Targets    []bench.Target `json:"targets"`
		Replicas   int            `json:"replicas"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if res.Experiment != Name || res.Replicas != Replicas {
		t.Errorf("experiment %q, replicas %d", res.Experiment, res.Replicas)
	}
	type key struct {
		part, name string
		conns      int
	}
	var want []key
	for _, n := range ExchangeConnections {
		for _, a := range armNames {
			want = append(want, key{PartExchange, a, n})
		}
	}
	for _, p := range []struct {
		part  string
		conns int
	}{{PartBulk, BulkConnections}, {PartConnect, ConnectConnections}, {PartIdle, 200}} {
		for _, a := range armNames {
			want = append(want, key{p.part, a, p.conns})
		}
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(want))
	}
	for i, r := range res.Rows {
		if got := (key{r.Part, r.Name, r.Connections}); got != want[i] {
			t.Fatalf("row %d is %+v, want %+v", i, got, want[i])
		}
		what := r.Part + " " + r.Name
		if r.Skipped != "" {
			if os.Getenv("CI") == "true" || !strings.Contains(r.Skipped, "apt-get install") {
				t.Errorf("%s skipped: %q (on CI scripts/test.sh installs haproxy, nginx and libnginx-mod-stream)", what, r.Skipped)
			}
			continue
		}
		if r.Part == PartIdle {
			if r.Name == ArmDirect {
				if r.Memory != nil || r.Note == "" {
					t.Errorf("direct idle row %+v, want a note and no memory", r)
				}
				continue
			}
			m := r.Memory
			if m == nil || m.RSSBytes <= 0 {
				t.Errorf("%s: memory %+v, want the balancer's", what, m)
				continue
			}
			// Each idle connection holds at least the client's and the
			// replica's socket in the balancer (a splicing one also its
			// pipes), and all of them were opened.
			if m.FDsPerConnection < 1.9 {
				t.Errorf("%s: %.2f descriptors per idle connection, want at least 2", what, m.FDsPerConnection)
			}
			if r.FirstError != "" {
				t.Errorf("%s: %s", what, r.FirstError)
			}
			if r.VsHAProxy == nil {
				t.Errorf("%s: no ratio against HAProxy", what)
			}
			continue
		}
		if r.Figures == nil || r.Count == 0 || !(r.ThroughputRPS > 0) || !(r.P50 > 0) || r.P99 < r.P50 {
			t.Errorf("%s at %d: figures %+v, want operations with p50 > 0 and p99 ≥ p50", what, r.Connections, r.Figures)
			continue
		}
		if r.Errors != 0 {
			t.Errorf("%s at %d: %d failed operations (first: %s)", what, r.Connections, r.Errors, r.FirstError)
		}
		if r.Part == PartBulk && !(r.ThroughputMiBs > 0) {
			t.Errorf("%s: %v MiB/s", what, r.ThroughputMiBs)
		}
		if r.VsHAProxy == nil || !(r.VsHAProxy.Throughput > 0) {
			t.Errorf("%s at %d: ratios %+v, want against HAProxy", what, r.Connections, r.VsHAProxy)
		}
	}
	if len(res.Targets) != 12 {
		t.Errorf("%d targets, want 12: %+v", len(res.Targets), res.Targets)
	}
	for _, name := range []string{"exchange_throughput.png", "exchange_p99.png", "bulk_connect.png", "idle_memory.png"} {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Errorf("plot %s: %v", name, err)
			continue
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("plot %s: %v", name, err)
		}
		f.Close()
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Targets", "## 64-byte exchanges", "## 1 MiB transfers", "## New connections per second", "## Memory per idle connection", "option splice-auto"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}
