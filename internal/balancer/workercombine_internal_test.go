package balancer

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestCombineWorkers(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const stale = 1500 * time.Millisecond
	at := func(age time.Duration) time.Time { return now.Add(-age) }
	rep := func(load float64, metrics map[string]float64, clients ...protocol.ClientRate) protocol.Report {
		return protocol.Report{Load: load, Metrics: metrics, Clients: clients}
	}
	c := func(id string, rate float64) protocol.ClientRate { return protocol.ClientRate{ID: id, Rate: rate} }
	tests := []struct {
		name      string
		reports   map[int]workerReport
		want      protocol.Report
		wantFresh int
	}{
		{
			name:    "none",
			reports: nil,
			want:    protocol.Report{},
		},
		{
			name:      "one worker is its own report",
			reports:   map[int]workerReport{3: {at(0), rep(7, map[string]float64{"rps": 7, "latency_ms": 4, "cpu": 0.2}, c("a", 5), c("b", 2))}},
			want:      rep(7, map[string]float64{"rps": 7, "latency_ms": 4, "cpu": 0.2}, c("a", 5), c("b", 2)),
			wantFresh: 1,
		},
		{
			name: "sums",
			reports: map[int]workerReport{
				0: {at(0), rep(10, map[string]float64{"inflight": 2, "rps": 10, "eps": 1, "cpu": 0.25, "cpu_other": 0.1, "bw": 0.05, "bound_clients": 3})},
				1: {at(time.Second), rep(30, map[string]float64{"inflight": 5, "rps": 30, "eps": 0.5, "cpu": 0.5, "cpu_other": 0.2, "bw": 0.15, "bound_clients": 4})},
			},
			want:      rep(40, map[string]float64{"inflight": 7, "rps": 40, "eps": 1.5, "cpu": 0.75, "cpu_other": 0.30000000000000004, "bw": 0.2, "bound_clients": 7}),
			wantFresh: 2,
		},
		{
			name: "latencies and utilization weighted by rps",
			reports: map[int]workerReport{
				0: {at(0), rep(10, map[string]float64{"rps": 10, "latency_ms": 2, "utilization": 0.2, "latency_p50_ms": 1, "latency_p99_ms": 10})},
				1: {at(0), rep(30, map[string]float64{"rps": 30, "latency_ms": 6, "utilization": 0.6, "latency_p50_ms": 5, "latency_p99_ms": 50})},
			},
			// (10·2 + 30·6)/40 = 5; (10·0.2 + 30·0.6)/40 = 0.5; (10+150)/40 = 4; (100+1500)/40 = 40.
			want:      rep(40, map[string]float64{"rps": 40, "latency_ms": 5, "utilization": 0.5, "latency_p50_ms": 4, "latency_p99_ms": 40}),
			wantFresh: 2,
		},
		{
			name: "equal weights when all rps are 0",
			reports: map[int]workerReport{
				0: {at(0), rep(0, map[string]float64{"rps": 0, "latency_ms": 2, "utilization": 0.1})},
				1: {at(0), rep(0, map[string]float64{"latency_ms": 6, "utilization": 0.3})},
			},
			want:      rep(0, map[string]float64{"rps": 0, "latency_ms": 4, "utilization": 0.2}),
			wantFresh: 2,
		},
		{
			name: "a worker without rps weighs 0 beside one with rps",
			reports: map[int]workerReport{
				0: {at(0), rep(5, map[string]float64{"rps": 5, "latency_ms": 2})},
				1: {at(0), rep(1, map[string]float64{"latency_ms": 100})},
			},
			want:      rep(6, map[string]float64{"rps": 5, "latency_ms": 2}),
			wantFresh: 2,
		},
		{
			name: "a stale worker drops out",
			reports: map[int]workerReport{
				0: {at(stale + time.Millisecond), rep(100, map[string]float64{"rps": 100, "latency_ms": 50}, c("old", 100))},
				1: {at(stale), rep(10, map[string]float64{"rps": 10, "latency_ms": 3}, c("a", 10))},
				2: {at(0), rep(20, map[string]float64{"rps": 20, "latency_ms": 6}, c("b", 20))},
			},
			// (10·3 + 20·6)/30 = 5.
			want:      rep(30, map[string]float64{"rps": 30, "latency_ms": 5}, c("b", 20), c("a", 10)),
			wantFresh: 2,
		},
		{
			name: "all stale",
			reports: map[int]workerReport{
				0: {at(time.Hour), rep(100, nil)},
			},
			want: protocol.Report{},
		},
		{
			name: "clients merged by id, busiest first, ties by id",
			reports: map[int]workerReport{
				0: {at(0), rep(9, nil, c("a", 3), c("b", 4), c("d", 2))},
				1: {at(0), rep(9, nil, c("c", 5), c("a", 2), c("e", 2))},
			},
			want:      rep(18, nil, c("a", 5), c("c", 5), c("b", 4), c("d", 2), c("e", 2)),
			wantFresh: 2,
		},
		{
			name: "shares clamped to 1, other metrics averaged",
			reports: map[int]workerReport{
				0: {at(0), rep(1, map[string]float64{"cpu": 0.75, "bw": 0.5, "queue": 4})},
				1: {at(0), rep(1, map[string]float64{"cpu": 0.5, "bw": 0.75})},
				2: {at(0), rep(1, map[string]float64{"queue": 8})},
			},
			want:      rep(3, map[string]float64{"cpu": 1, "bw": 1, "queue": 6}),
			wantFresh: 3,
		},
		{
			name: "load bounded",
			reports: map[int]workerReport{
				0: {at(0), rep(protocol.MaxLoad, nil, c("a", protocol.MaxRate))},
				1: {at(0), rep(protocol.MaxLoad, nil, c("a", protocol.MaxRate))},
			},
			want:      rep(protocol.MaxLoad, nil, c("a", protocol.MaxRate)),
			wantFresh: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, fresh := combineWorkers(tc.reports, now, stale)
			if fresh != tc.wantFresh || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("combineWorkers = %+v (fresh %d), want %+v (fresh %d)", got, fresh, tc.want, tc.wantFresh)
			}
		})
	}
}

// TestCombineWorkersCapsClients: the merged client list keeps the
// busiest MaxReportClients.
func TestCombineWorkersCapsClients(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	reports := map[int]workerReport{}
	for w := range 2 {
		var clients []protocol.ClientRate
		for i := range protocol.MaxReportClients {
			clients = append(clients, protocol.ClientRate{ID: fmt.Sprintf("w%d-c%04d", w, i), Rate: float64(2*i + w)})
		}
		reports[w] = workerReport{at: now, rep: protocol.Report{Load: 1, Clients: clients}}
	}
	got, _ := combineWorkers(reports, now, time.Second)
	if len(got.Clients) != protocol.MaxReportClients {
		t.Fatalf("%d clients, want %d", len(got.Clients), protocol.MaxReportClients)
	}
	// The busiest 1024 of rates 0..2047 are 1024..2047.
	if first, last := got.Clients[0], got.Clients[len(got.Clients)-1]; first.Rate != 2047 || last.Rate != 1024 {
		t.Errorf("kept rates %v .. %v, want 2047 .. 1024", first.Rate, last.Rate)
	}
}

func TestWorkerShed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                           string
		shed, workerLoad, combinedLoad float64
		fresh                          int
		want                           float64
	}{
		{"by load", 30, 10, 40, 2, 7.5},
		{"the busy worker sheds most", 30, 30, 40, 2, 22.5},
		{"no shed", 0, 10, 40, 2, 0},
		{"no load: equal parts", 30, 0, 0, 3, 10},
		{"a worker's load above the combined (stale siblings) sheds at most all", 10, 50, 40, 1, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := workerShed(tc.shed, tc.workerLoad, tc.combinedLoad, tc.fresh); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("workerShed(%v, %v, %v, %d) = %v, want %v", tc.shed, tc.workerLoad, tc.combinedLoad, tc.fresh, got, tc.want)
			}
		})
	}
}

func TestPacingWorker(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	reports := map[int]workerReport{
		0: {at: now.Add(-2 * time.Second)},
		2: {at: now},
		1: {at: now.Add(-time.Second)},
	}
	if got := pacingWorker(reports, now, 1500*time.Millisecond); got != 1 {
		t.Errorf("pacing worker %d, want 1 (0 is stale)", got)
	}
	if got := pacingWorker(reports, now, 3*time.Second); got != 0 {
		t.Errorf("pacing worker %d, want 0", got)
	}
	if got := pacingWorker(reports, now.Add(time.Hour), time.Second); got != -1 {
		t.Errorf("pacing worker %d with all stale, want -1", got)
	}
}
