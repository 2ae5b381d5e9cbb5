package bench

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// constantRun is n calls of latency each in elapsed.
func constantRun(n int, latency, elapsed time.Duration) LoadResult {
	rec := stats.NewRecorder()
	for range n {
		rec.Record(latency)
	}
	return LoadResult{Rec: rec, Elapsed: elapsed}
}

// overheadConf is an overhead configuration with the given rounds.
func overheadConf(name string, rounds ...LoadResult) *overheadConfig {
	c := &overheadConfig{name: name, rounds: rounds, total: LoadResult{Rec: stats.NewRecorder()}}
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
	direct := overheadConf(ConfigDirect, constantRun(100, 100*time.Microsecond, 10*ms), constantRun(100, 200*time.Microsecond, 20*ms),
		constantRun(100, 100*time.Microsecond, 10*ms), constantRun(100, 150*time.Microsecond, 15*ms), constantRun(100, 100*time.Microsecond, 10*ms))
	onDemand := overheadConf(ConfigOnDemand, constantRun(100, 102*time.Microsecond, 10200*time.Microsecond), constantRun(100, 204*time.Microsecond, 20400*time.Microsecond),
		constantRun(100, 900*time.Microsecond, 90*ms), constantRun(100, 153*time.Microsecond, 15300*time.Microsecond), constantRun(100, 102*time.Microsecond, 10200*time.Microsecond))
	skipped := &overheadConfig{name: ConfigHAProxy, skipped: "haproxy is not installed (apt-get install haproxy)"}
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

	rep := NewReport("x")
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
		size Size
		ok   bool
	}{
		{"defaults", Overhead{}, Full, true},
		{"smoke", Overhead{}, Smoke, true},
		{"too few rounds", Overhead{Rounds: 4}, Quick, false},
		{"fewer calls than rounds", Overhead{Calls: 3, Rounds: 5}, Quick, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.o.Check(tc.size); (err == nil) != tc.ok {
				t.Errorf("Check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestScalabilityRegressionPerConfiguration(t *testing.T) {
	t.Parallel()
	targets := []*scalTarget{{name: ConfigDirect, grid: true}, {name: ConfigHAProxy, grid: true, skipped: "missing"}, {name: ConfigNGINX}}
	var rows []ScalabilityRow
	for _, x := range []int{1, 2, 4} {
		for _, y := range []int{1, 4, 16} {
			r := ScalabilityRow{Part: "grid", Name: ConfigDirect, Processes: x, Callers: y}
			r.Count = 10
			r.Mean = 50 + 3*float64(x) + 5*float64(y) + 7*float64(x*y)
			rows = append(rows, r)
		}
	}
	fits, notes := regressions(rows, targets)
	f, ok := fits[ConfigDirect]
	if !ok {
		t.Fatalf("no fit: %v", notes)
	}
	for i, got := range []float64{f.Beta0, f.Beta1, f.Beta2, f.Beta3, f.R2} {
		if want := []float64{50, 3, 5, 7, 1}[i]; math.Abs(got-want) > 1e-6 {
			t.Errorf("coefficient %d = %v, want %v", i, got, want)
		}
	}
	if _, ok := fits[ConfigHAProxy]; ok || notes[ConfigHAProxy] != "missing" {
		t.Errorf("skipped configuration: fit %v, note %q", fits[ConfigHAProxy], notes[ConfigHAProxy])
	}
	if _, ok := fits[ConfigNGINX]; ok {
		t.Error("nginx is not in the grid, yet fitted")
	}
}

func TestScalabilityCheck(t *testing.T) {
	t.Parallel()
	s := Scalability{Callers: []int{0}}
	if err := s.Check(Quick); err == nil {
		t.Error("0 callers accepted")
	}
	s = Scalability{}
	if err := s.Check(Smoke); err != nil || s.Duration != 0 {
		t.Errorf("Check = %v and changed the flags (%v)", err, s.Duration)
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	names := Names()
	for _, want := range []string{"overhead", "scalability"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not registered: %v", want, names)
		}
	}
	if names[0] != "overhead" {
		t.Errorf("order %v, want overhead first", names)
	}
	a, _ := New("overhead")
	b, _ := New("overhead")
	if a == b {
		t.Error("New returns the same value twice")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering overhead twice did not panic")
		}
	}()
	Register("overhead", func() Experiment { return &Overhead{} })
}

// TestAllNamesLeavesTestbedOut: "bench all" runs the loopback experiments
// (within the 15 minutes at --quick); the testbed ones (root, 17
// minutes at --quick) only with --testbed.
func TestAllNamesLeavesTestbedOut(t *testing.T) {
	t.Parallel()
	want := []string{"overhead", "effectiveness", "scalability"}
	if got := AllNames(false); !slices.Equal(got, want) {
		t.Errorf("AllNames(false) = %v, want %v", got, want)
	}
	got := AllNames(true)
	if len(got) != len(Names()) || !slices.Contains(got, ALBLName) || !slices.Contains(got, RemotingName) {
		t.Errorf("AllNames(true) = %v, want every experiment %v", got, Names())
	}
}
