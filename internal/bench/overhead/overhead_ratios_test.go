package overhead

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// constantRun is n calls of latency each in elapsed.
func constantRun(n int, latency, elapsed time.Duration) bench.LoadResult {
	rec := stats.NewRecorder()
	for range n {
		rec.Record(latency)
	}
	return bench.LoadResult{Rec: rec, Elapsed: elapsed}
}

// overheadConf is an overhead configuration with the given rounds.
func overheadConf(name string, rounds ...bench.LoadResult) *overheadConfig {
	c := &overheadConfig{name: name, rounds: rounds, total: bench.LoadResult{Rec: stats.NewRecorder()}}
	for _, r := range rounds {
		c.total.Rec.Merge(r.Rec)
		c.total.Elapsed += r.Elapsed
	}
	return c
}

func TestOverheadRatiosAreMediansOfPerRoundRatios(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	// direct drifts from round to round; on-demand is 1.02× slower in
	// every round but one outlier, which the median ignores.
	direct := overheadConf(bench.ConfigDirect, constantRun(100, 100*time.Microsecond, 10*ms), constantRun(100, 200*time.Microsecond, 20*ms),
		constantRun(100, 100*time.Microsecond, 10*ms), constantRun(100, 150*time.Microsecond, 15*ms), constantRun(100, 100*time.Microsecond, 10*ms))
	onDemand := overheadConf(bench.ConfigOnDemand, constantRun(100, 102*time.Microsecond, 10200*time.Microsecond), constantRun(100, 204*time.Microsecond, 20400*time.Microsecond),
		constantRun(100, 900*time.Microsecond, 90*ms), constantRun(100, 153*time.Microsecond, 15300*time.Microsecond), constantRun(100, 102*time.Microsecond, 10200*time.Microsecond))
	skipped := &overheadConfig{name: bench.ConfigHAProxy, skipped: "haproxy is not installed (apt-get install haproxy)"}
	rows := overheadRows([]*overheadConfig{direct, onDemand, skipped})

	if *rows[0].ThroughputRatio != 1 || *rows[0].LatencyRatio != 1 {
		t.Errorf("direct's ratios %v, %v", *rows[0].ThroughputRatio, *rows[0].LatencyRatio)
	}
	od := rows[1]
	if math.Abs(*od.LatencyRatio-1.02) > 0.002 || math.Abs(*od.ThroughputRatio-1/1.02) > 0.002 {
		t.Errorf("on-demand ratios %.4f, %.4f; want 1.02 and 1/1.02 (medians, outlier ignored)", *od.LatencyRatio, *od.ThroughputRatio)
	}
	if od.Count != 500 || od.Rounds != 5 || od.LatencyRatioBounds.N != 5 {
		t.Errorf("on-demand row %+v", od)
	}
	if rows[2].ThroughputRatio != nil || rows[2].Skipped == "" || rows[2].Count != 0 {
		t.Errorf("skipped row %+v", rows[2])
	}

	rep := bench.NewReport("x")
	byName := map[string]OverheadRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	judgeOverhead(rep, []*overheadConfig{direct, onDemand, skipped}, byName)
	var got []string
	for _, tg := range rep.Targets() {
		got = append(got, tg.Name+": "+string(tg.Status))
	}
	want := []string{
		"on-demand throughput ≥ 0.97 × direct: met",
		"on-demand mean latency ≤ 1.05 × direct: met",
		"per-request throughput ≥ 1.0 × HAProxy: not measured",
		"per-request p99 ≤ HAProxy p99: not measured",
	}
	if !slices.Equal(got, want) {
		t.Errorf("targets\n%q\nwant\n%q", got, want)
	}
}

func TestOverheadCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Overhead
		size bench.Size
		ok   bool
	}{
		{"defaults", Overhead{}, bench.Full, true},
		{"smoke", Overhead{}, bench.Smoke, true},
		{"too few rounds", Overhead{Rounds: 4}, bench.Quick, false},
		{"fewer calls than rounds", Overhead{Calls: 3, Rounds: 5}, bench.Quick, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.o.Check(tc.size); (err == nil) != tc.ok {
				t.Errorf("Check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
