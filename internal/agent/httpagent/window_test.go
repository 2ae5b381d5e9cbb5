package httpagent

import (
	"math"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestWindowMetrics(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	from := snapshot{stubAt: t0, requests: 1000, inprog: 9, sumInprog: 50, readings: 10, cpuAt: t0, cpu: 3 * time.Second}
	// Two seconds later: 400 requests, 10 readings averaging 4 in
	// progress, 1 s of CPU on 2 cores.
	to := snapshot{stubAt: t0.Add(2 * time.Second), requests: 1400, inprog: 5, sumInprog: 90, readings: 20, cpuAt: t0.Add(2 * time.Second), cpu: 4 * time.Second}
	m := windowMetrics(from, to, 2)
	want := map[string]float64{
		protocol.MetricRPS:         200,
		protocol.MetricInflight:    5,
		protocol.MetricLatencyMS:   20, // 4 in progress / 200 per second
		protocol.MetricCPU:         0.25,
		protocol.MetricUtilization: 0.25,
	}
	if len(m) != len(want) {
		t.Fatalf("metrics %v, want %v", m, want)
	}
	for k, v := range want {
		if math.Abs(m[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
}

func TestWindowMetricsLeavesOutWhatWasNotRead(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// No stub_status reading in the window, CPU read; an idle window has
	// no latency; NGINX restarted (counter went back): no rate.
	cases := []struct {
		name     string
		from, to snapshot
		want     []string
	}{
		{"no stub reading", snapshot{stubAt: t0, cpuAt: t0}, snapshot{stubAt: t0, cpuAt: t0.Add(time.Second), cpu: time.Second}, []string{protocol.MetricCPU, protocol.MetricUtilization}},
		{"idle", snapshot{stubAt: t0, requests: 5}, snapshot{stubAt: t0.Add(time.Second), requests: 5, readings: 3}, []string{protocol.MetricRPS, protocol.MetricInflight}},
		{"restart", snapshot{stubAt: t0, requests: 5000}, snapshot{stubAt: t0.Add(time.Second), requests: 10, readings: 3, inprog: 2}, []string{protocol.MetricInflight}},
		{"first window", snapshot{}, snapshot{stubAt: t0, cpuAt: t0}, nil},
	}
	for _, tc := range cases {
		m := windowMetrics(tc.from, tc.to, 1)
		if len(m) != len(tc.want) {
			t.Errorf("%s: metrics %v, want keys %v", tc.name, m, tc.want)
			continue
		}
		for _, k := range tc.want {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: metrics %v lack %s", tc.name, m, k)
			}
		}
	}
	// CPU above the capacity (a wrong --cpus) is capped at 1.
	m := windowMetrics(snapshot{cpuAt: t0}, snapshot{cpuAt: t0.Add(time.Second), cpu: 3 * time.Second}, 1)
	if m[protocol.MetricCPU] != 1 {
		t.Errorf("cpu %v, want capped at 1", m[protocol.MetricCPU])
	}
}

// With a pool read at both ends, cpu_other is the pool's CPU time beyond
// the replica's, as a share of the cores; a pool unread at either end
// leaves it out.
func TestWindowMetricsOtherWork(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	from := snapshot{cpuAt: t0, cpu: time.Second, pool: 5 * time.Second, poolOK: true}
	// One second on half a core: the replica used 0.1 s, the pool 0.35 s.
	to := snapshot{cpuAt: t0.Add(time.Second), cpu: 1100 * time.Millisecond, pool: 5350 * time.Millisecond, poolOK: true}
	m := windowMetrics(from, to, 0.5)
	if math.Abs(m[protocol.MetricCPU]-0.2) > 1e-9 || math.Abs(m[protocol.MetricCPUOther]-0.5) > 1e-9 {
		t.Errorf("metrics %v, want cpu 0.2 and cpu_other 0.5", m)
	}
	to.poolOK = false
	if _, ok := windowMetrics(from, to, 0.5)[protocol.MetricCPUOther]; ok {
		t.Error("cpu_other reported without the pool read at the window's end")
	}
	// A pool below the replica (a process tree's clock against a
	// cgroup's accounting, read a moment apart) is no other work.
	to.poolOK, to.pool = true, 5050*time.Millisecond
	if got := windowMetrics(from, to, 0.5)[protocol.MetricCPUOther]; got != 0 {
		t.Errorf("pool below the replica: cpu_other %v, want 0", got)
	}
}

// latency_ms is the larger of Little's law and the mean time the window's
// stub_status reads took; in a window without client requests the reads'
// time stands alone, and without either nothing is reported.
func TestWindowMetricsLatency(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	from := snapshot{stubAt: t0, requests: 1000, sumInprog: 50, readings: 10, sumRTT: 40 * time.Millisecond}
	cases := []struct {
		name string
		to   snapshot
		want float64 // ms; 0: left out
	}{
		// 200 requests/s, 4 in progress on average: 20 ms by the law;
		// the reads took 1 ms each.
		{"law above the reads", snapshot{requests: 1200, sumInprog: 90, readings: 20, sumRTT: 50 * time.Millisecond}, 20},
		// 200 requests/s that no reading caught in progress: the law
		// says 0, the reads took 3 ms each.
		{"reads above the law", snapshot{requests: 1200, sumInprog: 50, readings: 20, sumRTT: 70 * time.Millisecond}, 3},
		{"no client request", snapshot{requests: 1000, sumInprog: 50, readings: 12, sumRTT: 45 * time.Millisecond}, 2.5},
		{"no reading in the window", snapshot{requests: 1200, sumInprog: 50, readings: 10, sumRTT: 40 * time.Millisecond}, 0},
	}
	for _, tc := range cases {
		tc.to.stubAt = t0.Add(time.Second)
		got, ok := windowMetrics(from, tc.to, 1)[protocol.MetricLatencyMS]
		switch {
		case tc.want == 0 && ok:
			t.Errorf("%s: latency_ms %v, want it left out", tc.name, got)
		case tc.want != 0 && (!ok || math.Abs(got-tc.want) > 1e-9):
			t.Errorf("%s: latency_ms %v (reported %v), want %v", tc.name, got, ok, tc.want)
		}
	}
}
