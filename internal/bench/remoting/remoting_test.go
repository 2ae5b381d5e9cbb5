package remoting

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

func TestRemotingSampleIsExponentialAndReproducible(t *testing.T) {
	t.Parallel()
	const n = 20000
	a := remotingSample(7, n, 30000, 10*time.Millisecond)
	if b := remotingSample(7, n, 30000, 10*time.Millisecond); !slices.Equal(a, b) {
		t.Fatal("the same seed drew different samples")
	}
	if c := remotingSample(8, n, 30000, 10*time.Millisecond); slices.Equal(a, c) {
		t.Fatal("two seeds drew the same sample")
	}
	var sumX, sumGap float64
	above := 0
	for _, c := range a {
		if c.X < 0 || c.Gap < 0 {
			t.Fatalf("negative draw %+v", c)
		}
		sumX += float64(c.X)
		sumGap += float64(c.Gap)
		if float64(c.X) > 30000 {
			above++
		}
	}
	// Means within 3% (their standard error is 0.7%); an exponential
	// has e^-1 of its mass above the mean.
	if m := sumX / n; math.Abs(m/30000-1) > 0.03 {
		t.Errorf("mean X %.0f, want about 30000", m)
	}
	if m := sumGap / n; math.Abs(m/float64(10*time.Millisecond)-1) > 0.03 {
		t.Errorf("mean gap %v, want about 10ms", time.Duration(m))
	}
	if share := float64(above) / n; math.Abs(share-math.Exp(-1)) > 0.02 {
		t.Errorf("share of X above the mean %.3f, want about %.3f (exponential)", share, math.Exp(-1))
	}
}

func TestFillReductionsAgainstRandom(t *testing.T) {
	t.Parallel()
	rows := []RemotingRow{
		{Replicas: 2, Utilization: 0.9, Strategy: "ett", LatencyMeanMS: 4, Calls: 10, roundMeans: []float64{2, 6}},
		{Replicas: 2, Utilization: 0.9, Strategy: "random", LatencyMeanMS: 10, Calls: 10, roundMeans: []float64{4, 16}},
		{Replicas: 2, Utilization: 0.5, Strategy: "ett", LatencyMeanMS: 3, Calls: 10},
		{Replicas: 2, Utilization: 0.5, Strategy: "random", LatencyMeanMS: 2, Calls: 10},
		{Replicas: 4, Utilization: 0.9, Strategy: "ett", LatencyMeanMS: 3, Calls: 10},
		{Replicas: 4, Utilization: 0.9, Strategy: "random", Calls: 0},
	}
	fillReductions(rows)
	want := []float64{0.6, 0, -0.5, 0}
	for i, w := range want {
		if r := rows[i].ReductionVsRandom; r == nil || math.Abs(*r-w) > 1e-12 {
			t.Errorf("row %d reduction %v, want %v", i, r, w)
		}
	}
	if got := rows[0].ReductionRounds; !slices.Equal(got, []float64{0.5, 0.625}) {
		t.Errorf("per-round reductions %v, want [0.5 0.625]", got)
	}
	for _, i := range []int{4, 5} {
		if rows[i].ReductionVsRandom != nil {
			t.Errorf("row %d has a reduction %v without a random baseline", i, *rows[i].ReductionVsRandom)
		}
	}

	rep := bench.NewReport("x")
	judgeRemoting(rep, rows, nil, remotingModel{calls: 20_000, samples: 10}, 2)
	var got []string
	for _, tg := range rep.Targets() {
		got = append(got, string(tg.Status))
	}
	// 2 replicas: 60% ≥ 47.6%; 4 replicas: random answered nothing.
	if !slices.Equal(got, []string{string(bench.Met), string(bench.Unknown)}) {
		t.Errorf("targets %v", rep.Targets())
	}

	// With ett+queue run, it is the one judged, plain ett's figure beside.
	queued := append(slices.Clone(rows[:2]), RemotingRow{Replicas: 2, Utilization: 0.9, Strategy: "ett+queue", LatencyMeanMS: 5.5, Calls: 10})
	fillReductions(queued)
	rep = bench.NewReport("x")
	judgeRemoting(rep, queued, nil, remotingModel{calls: 20_000, samples: 10}, 2)
	tg := rep.Targets()[0]
	if tg.Status != bench.Missed || !strings.Contains(tg.Name, "ett+queue's reduction") || !strings.Contains(tg.Detail, "45.0% (mean 5.50 ms); ett without the queue 60.0%") {
		t.Errorf("judged with the queue: %+v", tg)
	}
}

func TestRemotingCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Remoting)
		want string
	}{
		{"defaults", func(*Remoting) {}, ""},
		{"too many replicas for the CPU", func(x *Remoting) { x.Replicas = []int{16} }, "--replicas"},
		{"no random", func(x *Remoting) { x.Strategies = []string{"ett"} }, "includes random"},
		{"unknown strategy", func(x *Remoting) { x.Strategies = []string{"random", "nonesuch"} }, "nonesuch"},
		{"twice", func(x *Remoting) { x.Strategies = []string{"random", "random"} }, "once"},
		{"queued", func(x *Remoting) { x.Strategies = []string{"random", "ett+queue", "least-connections+queue"} }, ""},
		{"unknown queued strategy", func(x *Remoting) { x.Strategies = []string{"random", "nonesuch+queue"} }, "nonesuch+queue"},
		{"queue slots", func(x *Remoting) { x.QueueSlots = 0 }, "--queue-slots"},
		{"utilisation 0", func(x *Remoting) { x.Utilizations = []float64{0} }, "--utilizations"},
		{"X mean 0", func(x *Remoting) { x.XMean = 0 }, "--x-mean"},
		{"CPU 0", func(x *Remoting) { x.CPU = 0 }, "--cpu"},
		{"report interval", func(x *Remoting) { x.ReportInterval = time.Millisecond }, "--report-interval"},
		{"negative clients", func(x *Remoting) { x.Clients = -1 }, "--clients"},
		{"more rounds than calls", func(x *Remoting) { x.Calls, x.Rounds = 2, 3 }, "--rounds"},
		{"repeats", func(x *Remoting) { x.Repeats = 5 }, ""},
		{"no repeat", func(x *Remoting) { x.Repeats = 0 }, "--repeats"},
		{"too many repeats", func(x *Remoting) { x.Repeats = 101 }, "--repeats"},
		{"go replicas", func(x *Remoting) { x.Replica = "go" }, ""},
		{"negative lead", func(x *Remoting) { d := -time.Millisecond; x.QueueLead = &d }, "--queue-lead"},
		{"lead above the limit", func(x *Remoting) { d := time.Hour; x.QueueLead = &d }, "--queue-lead"},
		{"unknown replica", func(x *Remoting) { x.Replica = "apache" }, "--replica"},
		{"load against the CPU quota", func(x *Remoting) { x.LoadFrom = "cpu" }, ""},
		{"unknown load basis", func(x *Remoting) { x.LoadFrom = "quota" }, "--load-from"},
		{"stateful case", func(x *Remoting) { x.Case = RemotingCaseStateful }, ""},
		{"unknown case", func(x *Remoting) { x.Case = "stateless" }, "--case"},
		{"stateful share above 1", func(x *Remoting) { x.StatefulShare = 1.5 }, "--stateful-share"},
		{"no singleton", func(x *Remoting) { x.Singletons = 0 }, "--singletons"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newRemoting()
			tc.edit(x)
			err := x.Check(bench.Quick)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// --queue-lead unset takes the replica's default: none on NGINX, 1 ms on
// Go; set, it wins on either, 0 included.
func TestRemotingQueueLead(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("remoting", pflag.ContinueOnError)
	x := newRemoting()
	x.AddFlags(fs)
	if got := x.queueLead(); got != 0 {
		t.Errorf("NGINX replicas, no --queue-lead: %v, want 0", got)
	}
	x.Replica = RemotingReplicaGo
	if got := x.queueLead(); got != time.Millisecond {
		t.Errorf("Go replicas, no --queue-lead: %v, want 1ms", got)
	}
	if err := fs.Parse([]string{"--queue-lead", "0"}); err != nil {
		t.Fatal(err)
	}
	if got := x.queueLead(); got != 0 {
		t.Errorf("Go replicas, --queue-lead 0: %v, want 0", got)
	}
	x.Replica = RemotingReplicaNGINX
	if err := fs.Parse([]string{"--queue-lead", "2.5ms"}); err != nil {
		t.Fatal(err)
	}
	if got := x.queueLead(); got != 2500*time.Microsecond {
		t.Errorf("NGINX replicas, --queue-lead 2.5ms: %v, want 2.5ms", got)
	}
	if err := fs.Parse([]string{"--queue-lead", "soon"}); err == nil || !strings.Contains(err.Error(), "not a duration") {
		t.Errorf("--queue-lead soon: %v, want an error naming a duration", err)
	}
}

func TestRemotingSizes(t *testing.T) {
	t.Parallel()
	x := newRemoting()
	if s := x.sizes(bench.Full); !slices.Equal(s.replicas, []int{2, 4, 8}) || !slices.Equal(s.utils, []float64{0.5, 0.7, 0.9}) || s.calls != 1000 {
		t.Errorf("full sizes %+v", s)
	}
	if s := x.sizes(bench.Smoke); !slices.Equal(s.replicas, []int{2}) || s.calls != 15 {
		t.Errorf("smoke sizes %+v", s)
	}
	if x.clientsFor(4) != 8 {
		t.Errorf("clients for 4 replicas: %d, want 8", x.clientsFor(4))
	}
}

func TestRemotingPeriodHasTheSmallestQuota(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cpu  float64
		want time.Duration
	}{
		{0.5, 2 * time.Millisecond},
		{0.25, 4 * time.Millisecond},
		{0.125, 8 * time.Millisecond},
		{1.0 / 3, 3 * time.Millisecond},
		{0.1, 10 * time.Millisecond},
		{0.05, 10 * time.Millisecond}, // the testbed's default at most
		{1.5, time.Millisecond},       // the kernel's shortest period
	} {
		if got := remotingPeriod(tc.cpu); got != tc.want {
			t.Errorf("remotingPeriod(%g) = %v, want %v", tc.cpu, got, tc.want)
		}
	}
}

// TestRemotingCapacityValid: a capacity measured while the saturated
// replicas used under 80% of their quotas (the run of 2026-11-22 09:33
// measured 9%: 103 calls/s instead of about 1100) is refused.
func TestRemotingCapacityValid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		used float64
		ok   bool
	}{{0.94, true}, {1, true}, {0.8, true}, {0.79, false}, {0.09, false}, {0, false}} {
		err := remotingCapacityValid(tt.used)
		if (err == nil) != tt.ok {
			t.Errorf("remotingCapacityValid(%v) = %v, want ok %v", tt.used, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "quotas") {
			t.Errorf("remotingCapacityValid(%v): %q does not say what was measured", tt.used, err)
		}
		// The bench sets such a group up again (runGroup).
		if err != nil && !errors.Is(err, errUnsaturated) {
			t.Errorf("remotingCapacityValid(%v) = %v, not errUnsaturated", tt.used, err)
		}
	}
}

// TestRemotingCalibrationArithmetic: the CPU per unit of X from a
// measurement, the gap it sets, and the estimate's update, with the
// figures of the rerun of 2026-11-22 (capacity 0.73 ms of CPU per call,
// samples 0.88 ms; X mean 300,000; 1 core; 8 clients).
func TestRemotingCalibrationArithmetic(t *testing.T) {
	t.Parallel()
	const xMean = 300_000
	// 1.46 s of CPU for 2000 calls of X mean 300,000: 0.73 ms per call.
	capEst, ok := remotingCPUPerX(1460*time.Millisecond, 2000*xMean)
	if !ok || math.Abs(capEst*xMean/1e6-0.73) > 1e-9 {
		t.Fatalf("remotingCPUPerX = %v, %v; want 0.73 ms per call", capEst*xMean/1e6, ok)
	}
	if _, ok := remotingCPUPerX(0, 100); ok {
		t.Error("no CPU time measured, yet an estimate")
	}
	if _, ok := remotingCPUPerX(time.Second, 0); ok {
		t.Error("no call answered, yet an estimate")
	}

	// 90% of 1 core at 0.73 ms per call: 1232.9 calls/s, 8 clients →
	// a gap of 6.489 ms.
	gap := remotingGap(0.9, 1, 8, xMean, capEst)
	if want := 8 / (0.9 / 0.73e-3); math.Abs(gap.Seconds()-want) > 1e-9 {
		t.Errorf("gap %v, want %.6f s", gap, want)
	}
	// The old bench offered this rate whatever the CPU per call during
	// the samples: at 0.88 ms it is 108% of the quota, and flagged.
	samples, _ := remotingCPUPerX(1760*time.Millisecond, 2000*xMean)
	over := 8 / gap.Seconds() * samples * xMean / 1e9
	if math.Abs(over-0.9*0.88/0.73) > 1e-6 {
		t.Errorf("utilisation at the old rate %.4f, want %.4f", over, 0.9*0.88/0.73)
	}
	if f := remotingLoadFlag(0.9, over); !strings.HasPrefix(f, "saturated") {
		t.Errorf("flag at %.3f = %q, want saturated", over, f)
	}
	// The update takes the latest measurement: the next gap offers 90%
	// at 0.88 ms per call.
	est := nextCPUPerX(capEst, samples, true)
	if est != samples {
		t.Errorf("estimate %v, want the latest measurement %v", est, samples)
	}
	next := remotingGap(0.9, 1, 8, xMean, est)
	if u := 8 / next.Seconds() * est * xMean / 1e9; math.Abs(u-0.9) > 1e-6 {
		t.Errorf("utilisation at the recalibrated rate %.6f, want 0.9", u)
	}

	for _, tc := range []struct {
		name           string
		prev, measured float64
		ok             bool
		want           float64
	}{
		{"latest", 2.4, 2.9, true, 2.9},
		{"unusable", 2.4, 0, false, 2.4},
		{"NaN", 2.4, math.NaN(), true, 2.4},
		{"at most twice", 2.4, 9, true, 4.8},
		{"at least half", 2.4, 0.1, true, 1.2},
		{"no previous", 0, 2.9, true, 2.9},
	} {
		if got := nextCPUPerX(tc.prev, tc.measured, tc.ok); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: nextCPUPerX(%v, %v, %v) = %v, want %v", tc.name, tc.prev, tc.measured, tc.ok, got, tc.want)
		}
	}
	for _, bad := range []time.Duration{remotingGap(0, 1, 8, xMean, est), remotingGap(0.9, 1, 0, xMean, est), remotingGap(0.9, 1, 8, xMean, 0)} {
		if bad != 0 {
			t.Errorf("a gap %v from an input that cannot make one", bad)
		}
	}
}

// TestRemotingPlanOffersTheTarget: the planned calls, at the estimated
// CPU per unit of X, offer exactly the utilisation asked for within their
// window, every client's last call at calls × gap; the X are the
// seed's.
func TestRemotingPlanOffersTheTarget(t *testing.T) {
	t.Parallel()
	const (
		xMean   = 300_000
		est     = 2.7 // ns per unit of X: 0.81 ms per call at the mean
		clients = 4
		calls   = 100
	)
	for _, u := range []float64{0.5, 0.9} {
		plan, gap := remotingPlan(5<<16, clients, calls, xMean, u, 1, est)
		if gap <= 0 || len(plan) != clients {
			t.Fatalf("u %v: gap %v, %d clients", u, gap, len(plan))
		}
		var xSum float64
		for c, calls := range plan {
			var span time.Duration
			for _, call := range calls {
				if call.Gap < 0 {
					t.Fatalf("u %v: negative gap %v", u, call.Gap)
				}
				span += call.Gap
				xSum += float64(call.X)
			}
			if span != gap*time.Duration(len(calls)) {
				t.Errorf("u %v, client %d: span %v, want %v", u, c, span, gap*time.Duration(len(calls)))
			}
			if drawn := remotingSample(5<<16|uint64(c), len(calls), xMean, time.Second); drawn[7].X != calls[7].X {
				t.Errorf("u %v, client %d: X %d, the seed draws %d", u, c, calls[7].X, drawn[7].X)
			}
		}
		window := gap * calls
		offered := remotingUtilization(time.Duration(xSum*est), window, 1)
		if math.Abs(offered-u) > 1e-6 {
			t.Errorf("planned utilisation %.6f, want %v", offered, u)
		}
	}
}

func TestRemotingFitSpan(t *testing.T) {
	t.Parallel()
	calls := []remotingCall{{Gap: 1}, {Gap: 3}, {Gap: 0}, {Gap: 4}}
	fitSpan(calls, 10*time.Millisecond)
	want := []time.Duration{5 * time.Millisecond, 15 * time.Millisecond, 0, 20 * time.Millisecond}
	for i, c := range calls {
		if c.Gap != want[i] {
			t.Errorf("gaps %v, want %v", calls, want)
			break
		}
	}
	zero := []remotingCall{{}, {}}
	fitSpan(zero, time.Millisecond)
	if zero[0].Gap != time.Millisecond || zero[1].Gap != time.Millisecond {
		t.Errorf("all-zero gaps fitted to %v, want 1ms each", zero)
	}
	fitSpan(nil, time.Millisecond) // no calls: nothing to do, no panic
}

// TestRemotingLoadFlag: a sample counts only within 0.05 of its target
// and with the replicas under 97% of their quotas.
func TestRemotingLoadFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		target, measured float64
		want             string // prefix; "" counts
	}{
		{0.9, 0.9, ""},
		{0.9, 0.95, ""},
		{0.9, 0.851, ""},
		{0.9, 0.96, "overloaded"},
		{0.9, 0.97, "saturated"},
		{0.9, 1.07, "saturated"},
		{0.9, 0.8, "underloaded"},
		{0.5, 0.56, "overloaded"},
		{0.5, 0.53, ""},
		{1.0, 0.98, ""}, // overload asked for
		{0.9, 0, "load not measured"},
		{0.9, math.NaN(), "load not measured"},
	} {
		got := remotingLoadFlag(tc.target, tc.measured)
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("remotingLoadFlag(%v, %v) = %q, want %q…", tc.target, tc.measured, got, tc.want)
		}
	}
	if u := remotingUtilization(1800*time.Millisecond, 2*time.Second, 1); math.Abs(u-0.9) > 1e-12 {
		t.Errorf("1.8 s of CPU over 2 s on 1 core: utilisation %v, want 0.9", u)
	}
	if u := remotingUtilization(time.Second, 0, 1); u != 0 {
		t.Errorf("no window: utilisation %v, want 0", u)
	}
}

// TestJudgeRemotingFlaggedSample: a flagged ett or random sample at 90%
// is not counted by the target, which says why.
func TestJudgeRemotingFlaggedSample(t *testing.T) {
	t.Parallel()
	rows := []RemotingRow{
		{Replicas: 2, Utilization: 0.9, Strategy: "ett", LatencyMeanMS: 4, Calls: 10, MeasuredUtilization: 0.91},
		{Replicas: 2, Utilization: 0.9, Strategy: "random", LatencyMeanMS: 10, Calls: 10, MeasuredUtilization: 0.92},
		{Replicas: 4, Utilization: 0.9, Strategy: "ett", LatencyMeanMS: 78, Calls: 10, MeasuredUtilization: 1.07},
		{Replicas: 4, Utilization: 0.9, Strategy: "random", LatencyMeanMS: 67, Calls: 10, MeasuredUtilization: 1.05},
	}
	for i := range rows {
		rows[i].UtilizationFlag = remotingLoadFlag(rows[i].Utilization, rows[i].MeasuredUtilization)
	}
	fillReductions(rows)
	rep := bench.NewReport("x")
	judgeRemoting(rep, rows, nil, remotingModel{calls: 20_000, samples: 10}, 2)
	tg := rep.Targets()
	if len(tg) != 2 || tg[0].Status != bench.Met || tg[1].Status != bench.Unknown {
		t.Fatalf("targets %+v, want met (2 replicas) and not measured (4, flagged)", tg)
	}
	for _, want := range []string{"not counted", "ett saturated", "random saturated", "-16.4%"} {
		if !strings.Contains(tg[1].Detail, want) {
			t.Errorf("4-replica target %q does not say %q", tg[1].Detail, want)
		}
	}
}

// TestRemotingReportRounds: a strategy's row in report.md gives its
// whole-sample reduction, the spread of its per-round reductions and their
// median.
func TestRemotingReportRounds(t *testing.T) {
	t.Parallel()
	rows := []RemotingRow{
		{Replicas: 4, Utilization: 0.9, Strategy: "ett", LatencyMeanMS: 16, Calls: 10, roundMeans: []float64{34, 10, 9, 36, 9}},
		{Replicas: 4, Utilization: 0.9, Strategy: "random", LatencyMeanMS: 26, Calls: 10, roundMeans: []float64{35, 18, 25, 37, 22}},
	}
	fillReductions(rows)
	x := newRemoting()
	md := x.report(rows, nil, x.sizes(bench.Quick)).Markdown(&bench.Results{})
	// Per round: 1−34/35, 1−10/18, 1−9/25, 1−36/37, 1−9/22 → 3%, 44%, 64%, 3%, 59%.
	for _, want := range []string{"38.5% (rounds 3…64%, median 44%)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md does not contain %q:\n%s", want, md)
		}
	}
}

// TestRemotingReferences: the report's reference gives the M/M/n figure,
// the two simulated processor-sharing ones in order and, given the
// sample's size, the spread of samples that size around them; or says
// why there is none.
func TestRemotingReferences(t *testing.T) {
	t.Parallel()
	model := remotingModel{calls: 20_000, samples: 10}
	got := remotingReferences(2, 0.9, 0, 0, model, 2)
	re := regexp.MustCompile(`^at random's measured load of 90%, M/M/2 \(one shared queue\): 47\.4%; processor-sharing replicas \(simulated\): shortest queue ([0-9.]+)%, least delay knowing every call's work ([0-9.]+)%, front door queue with 2 slots per replica, least cost first, ([0-9.]+)%$`)
	m := re.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("references %q", got)
	}
	jsq, _ := strconv.ParseFloat(m[1], 64)
	best, _ := strconv.ParseFloat(m[2], 64)
	held, _ := strconv.ParseFloat(m[3], 64)
	if !(jsq > 30 && best > jsq && best < 47.4 && held > 60) {
		t.Errorf("shortest queue %v%%, least delay %v%%, queue %v%%: want 30 < shortest < least delay < M/M/2's 47.4 < 60 < queue", jsq, best, held)
	}
	sample := regexp.MustCompile(`; shortest queue in 10 model samples of 2000 calls in 2 rounds: (-?[0-9.]+)–(-?[0-9.]+)% \(5th–95th percentile\)$`)
	m = sample.FindStringSubmatch(remotingReferences(2, 0.9, 2000, 2, model, 2))
	if m == nil {
		t.Fatalf("no sample spread in %q", remotingReferences(2, 0.9, 2000, 2, model, 2))
	}
	lo, _ := strconv.ParseFloat(m[1], 64)
	hi, _ := strconv.ParseFloat(m[2], 64)
	if !(lo < jsq && jsq < hi) {
		t.Errorf("sample spread %v…%v%% does not hold the long run's %v%%", lo, hi, jsq)
	}
	if got := remotingReferences(4, 1.02, 2000, 2, model, 2); !strings.Contains(got, "no model reference at random's measured load of 102% (it is not below 100%)") {
		t.Errorf("saturated: %q", got)
	}
}

// TestRemotingSampleModel: the model of a 4-replica sample of 8,000
// calls in 4 rounds from idle puts random well below its steady state of
// 10 S at 90%, and the front door queue far below random; without the
// figures it needs there is no reference, and judgeRemoting puts it
// beside the target.
func TestRemotingSampleModel(t *testing.T) {
	t.Parallel()
	model := remotingModel{calls: 20_000, samples: 10}
	g := RemotingGroupSettings{Replicas: 4, CPUPerReplica: 0.25, CPUPeriodMS: 4, ReplicaServiceMS: 4.5}
	random := RemotingRow{Replicas: 4, Utilization: 0.9, Strategy: "random", LatencyMeanMS: 34.65, Calls: 8000, Rounds: 4, MeasuredUtilization: 0.9}
	judged := RemotingRow{Replicas: 4, Utilization: 0.9, Strategy: "ett+queue", LatencyMeanMS: 13.5, Calls: 8000, Rounds: 4, MeasuredUtilization: 0.9}
	got := remotingSampleModel(4, 0.9, g, random, judged, model, 1)
	re := regexp.MustCompile(`^in S = 4\.50 ms \(a replica's time per call at capacity\), random took 7\.70 S and ett\+queue 3\.00 S; the model of this sample \(replicas held to their quota, one call at a time, 8000 calls in 4 rounds from idle, mean of 10 draws\) gives random ([0-9.]+) S and a front door queue with 1 slot, least cost first, ([0-9.]+) S \(([0-9.]+)% below\)$`)
	m := re.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("sample model %q", got)
	}
	r, _ := strconv.ParseFloat(m[1], 64)
	h, _ := strconv.ParseFloat(m[2], 64)
	red, _ := strconv.ParseFloat(m[3], 64)
	if !(r > 5 && r < 9.5 && h > 1 && h < 2.5 && red > 70) {
		t.Errorf("model: random %v S, front door %v S, %v%% below; want random in (5, 9.5), front door in (1, 2.5), more than 70%% below", r, h, red)
	}
	for _, tc := range []struct {
		name string
		edit func(*RemotingGroupSettings, *RemotingRow)
	}{
		{"no capacity", func(g *RemotingGroupSettings, _ *RemotingRow) { g.ReplicaServiceMS = 0 }},
		{"no period", func(g *RemotingGroupSettings, _ *RemotingRow) { g.CPUPeriodMS = 0 }},
		{"no calls", func(_ *RemotingGroupSettings, r *RemotingRow) { r.Calls = 0 }},
		{"more rounds than calls", func(_ *RemotingGroupSettings, r *RemotingRow) { r.Calls, r.Rounds = 3, 4 }},
	} {
		g2, r2 := g, random
		tc.edit(&g2, &r2)
		if got := remotingSampleModel(4, 0.9, g2, r2, judged, model, 1); got != "" {
			t.Errorf("%s: %q, want none", tc.name, got)
		}
	}
	if got := remotingSampleModel(4, 1.02, g, random, judged, model, 1); got != "" {
		t.Errorf("saturated: %q, want none", got)
	}
	rows := []RemotingRow{random, judged}
	fillReductions(rows)
	rep := bench.NewReport("x")
	judgeRemoting(rep, rows, []RemotingGroupSettings{g}, model, 1)
	if d := rep.Targets()[1].Detail; !strings.Contains(d, "the model of this sample") {
		t.Errorf("4-replica target detail %q", d)
	}
}

func TestMMNReduction(t *testing.T) {
	for _, tc := range []struct {
		n    int
		rho  float64
		want float64
	}{
		// M/M/2 at 0.9: E[T]/S = 1/(1−ρ²) = 5.263 against 10.
		{2, 0.9, 1 - 1/(1-0.81)/10},
		{4, 0.9, 0.7032},
		// One server: the same queue either way.
		{1, 0.5, 0},
		// Light load: hardly any wait to save. M/M/2 at 0.1: 1/(1−0.01) against 1/0.9.
		{2, 0.1, 1 - 0.9/0.99},
	} {
		got, ok := mmnReduction(tc.n, tc.rho)
		if !ok || math.Abs(got-tc.want) > 5e-4 {
			t.Errorf("mmnReduction(%d, %v) = %.4f, %v; want %.4f", tc.n, tc.rho, got, ok, tc.want)
		}
	}
	for _, bad := range []struct {
		n   int
		rho float64
	}{{0, 0.5}, {2, 0}, {2, 1}, {2, 1.3}, {2, math.NaN()}} {
		if _, ok := mmnReduction(bad.n, bad.rho); ok {
			t.Errorf("mmnReduction(%d, %v) gave a reference", bad.n, bad.rho)
		}
	}
}

func TestFillCPUExcess(t *testing.T) {
	t.Parallel()
	rows := []RemotingRow{
		{Replicas: 2, Utilization: 0.9, Strategy: "ett", MeasuredUtilizationRounds: []float64{0.99, 0.90}},
		{Replicas: 2, Utilization: 0.9, Strategy: "random", MeasuredUtilizationRounds: []float64{0.90, 0.88}},
		{Replicas: 2, Utilization: 0.9, Strategy: "least-connections", MeasuredUtilizationRounds: []float64{0.88, 0.92}},
		{Replicas: 4, Utilization: 0.9, Strategy: "ett", MeasuredUtilizationRounds: []float64{0.9}},
	}
	fillCPUExcess(rows)
	want := [][]float64{{0.1, 0}, {0, -0.02 / 0.9}, {-0.02 / 0.9, 0.02 / 0.9}, nil}
	for i, w := range want {
		got := rows[i].CPUExcessRounds
		if len(got) != len(w) {
			t.Fatalf("row %d excess %v, want %v", i, got, w)
		}
		for k := range w {
			if math.Abs(got[k]-w[k]) > 1e-12 {
				t.Errorf("row %d round %d excess %v, want %v", i, k+1, got[k], w[k])
			}
		}
	}
	if got := remotingExcessText(rows, 2); !strings.Contains(got, "90% ett round 1 (+10%)") || strings.Contains(got, "random") {
		t.Errorf("report text %q, want ett's round 1 only", got)
	}
	if got := remotingExcessText(rows, 4); !strings.HasSuffix(got, ": none.") {
		t.Errorf("report text %q, want none", got)
	}
}

// TestCheckCountAnswers: the real prime service passes; a replica that
// miscounts, leaves a field out or fails does not.
func TestCheckCountAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler http.Handler
		want    string
	}{
		{"the prime service", backend.NewPrime(func() string { return "r1" }), ""},
		{"one too many", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			x, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/count/"))
			fmt.Fprintf(w, `{"x": %d, "count": %d}`, x, backend.PrimeCount(x)+1)
		}), "want x 0, count 0"},
		{"no count", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"x": 0}`)
		}), "count none"},
		{"a failure", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusInternalServerError)
		}), "500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			err := checkCountAnswers(t.Context(), srv.URL)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkCountAnswers = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A "+queue" row's queue figures add up the runs' counter deltas; one run
// whose counters could not be read, or went back (the group's queue was
// replaced), leaves them unknown rather than short.
func TestRemotingQueueCounts(t *testing.T) {
	var a remotingAgg
	a.addQueue(remotingQueueCounts{served: 10, wait: 1}, remotingQueueCounts{served: 40, wait: 1.3}, true)
	a.addQueue(remotingQueueCounts{served: 40, wait: 1.3}, remotingQueueCounts{served: 50, wait: 1.4}, true)
	if a.queueLost || a.queueRuns != 2 || a.queue.served != 40 || math.Abs(a.queue.wait-0.4) > 1e-12 {
		t.Fatalf("after two runs: %+v, want 40 served, 0.4 s waited over 2 runs", a)
	}
	for _, bad := range []struct {
		before, after remotingQueueCounts
		ok            bool
	}{
		{remotingQueueCounts{}, remotingQueueCounts{served: 5}, false},
		{remotingQueueCounts{served: 50}, remotingQueueCounts{served: 3}, true},
	} {
		b := a
		b.addQueue(bad.before, bad.after, bad.ok)
		if !b.queueLost {
			t.Errorf("addQueue(%+v, %+v, %v) kept the figures", bad.before, bad.after, bad.ok)
		}
	}
	wait, waited := 2.5, 0.75
	if got := queueWaitNote(RemotingRow{QueueWaitMS: &wait, QueueWaited: &waited}); got != " (2.50 ms of it in the front door's queue, where 75% of the calls waited)" {
		t.Errorf("note %q", got)
	}
	if got := queueWaitNote(RemotingRow{}); got != "" {
		t.Errorf("note without a queue %q", got)
	}
	c := remotingQueueCounts{early: 12}
	if got := earlyNote(c, true, time.Millisecond); got != " (12 slots freed ahead so far)" {
		t.Errorf("early note %q", got)
	}
	if earlyNote(c, true, 0) != "" || earlyNote(c, false, time.Millisecond) != "" {
		t.Errorf("an early note without a lead or without counts")
	}
}

// A repeat's rounds add up in its own agg, merged after the repeat into
// the strategy's: each repeat's mean is over its own answered calls, and
// the whole over all of them.
func TestRemotingAggRepeats(t *testing.T) {
	t.Parallel()
	rec := func(ms ...float64) remotingResult {
		r := remotingResult{Rec: stats.NewRecorder(), SendLag: stats.NewRecorder()}
		for _, v := range ms {
			r.Rec.Record(time.Duration(v * float64(time.Millisecond)))
		}
		return r
	}
	a := remotingAgg{res: rec()}
	first := remotingAgg{res: rec()}
	first.add(rec(2, 4), 10*time.Millisecond, time.Second, 1)
	first.addQueue(remotingQueueCounts{}, remotingQueueCounts{served: 1, wait: 0.5}, true)
	a.merge(&first)
	second := remotingAgg{res: rec()}
	second.add(rec(10), 20*time.Millisecond, time.Second, 1)
	second.add(rec(20, 30, 40), 30*time.Millisecond, 2*time.Second, 1)
	second.addQueue(remotingQueueCounts{served: 3}, remotingQueueCounts{served: 5, wait: 0.25}, true)
	a.merge(&second)
	if len(a.reps) != 2 || len(a.means) != 3 || a.res.Rec.Count() != 6 || a.cpu != 60*time.Millisecond || a.window != 4*time.Second {
		t.Fatalf("reps %+v, means %v, %d calls, CPU %v over %v; want 2 repeats, 3 rounds, 6 calls, 60ms over 4s", a.reps, a.means, a.res.Rec.Count(), a.cpu, a.window)
	}
	if m := a.res.Rec.Summary().Mean / 1000; math.Abs(m-106.0/6) > 0.05 {
		t.Errorf("pooled mean %v ms, want %v", m, 106.0/6)
	}
	if a.queue.served != 3 || a.queue.wait != 0.75 || a.queueRuns != 2 || a.queueLost {
		t.Errorf("queue %+v over %d runs (lost %v), want 3 served, 0.75 s over 2", a.queue, a.queueRuns, a.queueLost)
	}
	for k, want := range []remotingRepeat{{sum: 6, calls: 2, cpu: 10 * time.Millisecond, window: time.Second}, {sum: 100, calls: 4, cpu: 50 * time.Millisecond, window: 3 * time.Second}} {
		got := a.reps[k]
		if math.Abs(got.sum-want.sum) > 0.05 || got.calls != want.calls || got.cpu != want.cpu || got.window != want.window {
			t.Errorf("repeat %d: %+v, want %+v", k+1, got, want)
		}
	}
	if got := repeatsFlag([]string{"overloaded"}); got != "overloaded" {
		t.Errorf("one repeat's flag %q", got)
	}
	if got := repeatsFlag([]string{"", "overloaded", ""}); got != "repeat 2: overloaded" {
		t.Errorf("three repeats' flag %q", got)
	}
	if got := repeatsFlag([]string{"", ""}); got != "" {
		t.Errorf("unflagged repeats' flag %q", got)
	}
}

// TestJudgeRemotingRepeats: with several repeats a target pools the
// calls of the repeats in which neither the judged sample nor random's
// was flagged, names the others, and lists each repeat's reduction; a
// repeat with no answered call gives no reduction of its own.
func TestJudgeRemotingRepeats(t *testing.T) {
	t.Parallel()
	row := func(n int, strategy string, means []float64, calls []int64, flags []string) RemotingRow {
		r := RemotingRow{Replicas: n, Utilization: 0.9, Strategy: strategy, Repeats: len(means), RepeatMeansMS: means, RepeatCalls: calls, RepeatFlags: flags}
		var sum float64
		for k, m := range means {
			sum += m * float64(calls[k])
			r.Calls += calls[k]
		}
		r.LatencyMeanMS = sum / float64(r.Calls)
		r.UtilizationFlag = repeatsFlag(flags)
		return r
	}
	rows := []RemotingRow{
		// 2 replicas: repeat 2 has random overloaded; repeats 1 and 3
		// pool to 1 − (10·100 + 30·100)/(40·100 + 80·100) = 66.7%.
		row(2, "ett+queue", []float64{10, 5, 30}, []int64{100, 100, 100}, []string{"", "", ""}),
		row(2, "random", []float64{40, 200, 80}, []int64{100, 100, 100}, []string{"", "overloaded: replicas at 104% of their quotas, 90% of the capacity asked", ""}),
		// 4 replicas: every repeat flagged for one or the other.
		row(4, "ett+queue", []float64{10, 10}, []int64{100, 100}, []string{"capacity moved", ""}),
		row(4, "random", []float64{50, 50}, []int64{100, 100}, []string{"", "capacity moved"}),
	}
	fillReductions(rows)
	if got := rows[0].ReductionRepeats; len(got) != 3 || math.Abs(got[0]-0.75) > 1e-9 || math.Abs(got[1]-0.975) > 1e-9 || math.Abs(got[2]-0.625) > 1e-9 {
		t.Errorf("2-replica repeats' reductions %v, want 0.75, 0.975, 0.625", got)
	}
	rep := bench.NewReport("x")
	judgeRemoting(rep, rows, nil, remotingModel{calls: 20_000, samples: 10}, 1)
	tg := rep.Targets()
	if len(tg) != 2 || tg[0].Status != bench.Met || tg[1].Status != bench.Unknown {
		t.Fatalf("targets %+v, want met (2 replicas: 66.7%% ≥ 47.6%%) and not judged (4)", tg)
	}
	for _, want := range []string{"66.7% over 2 of 3 repeats (mean 20.00 ms; each repeat's reduction 75.0, 97.5, 62.5%, their mean 78.3% and median 75.0%; not counted, not at 90% load: repeat 2 (random overloaded"} {
		if !strings.Contains(tg[0].Detail, want) {
			t.Errorf("2-replica target %q does not say %q", tg[0].Detail, want)
		}
	}
	if !strings.Contains(tg[1].Detail, "not counted") || !strings.Contains(tg[1].Detail, "repeat 1: capacity moved") || !strings.Contains(tg[1].Detail, "repeat 2: capacity moved") {
		t.Errorf("4-replica target %q", tg[1].Detail)
	}
	// A repeat in which random answered nothing has no reduction.
	none := []RemotingRow{
		row(2, "ett", []float64{10, 10}, []int64{100, 100}, []string{"", ""}),
		row(2, "random", []float64{40, 0}, []int64{100, 0}, []string{"", ""}),
	}
	fillReductions(none)
	if got := none[0].ReductionRepeats; len(got) != 1 || got[0] != 0.75 {
		t.Errorf("reductions with an empty repeat %v, want [0.75]", got)
	}
	if _, err := json.Marshal(none); err != nil {
		t.Errorf("rows with an empty repeat do not encode: %v", err)
	}
}

// The model of the sample takes a group size's first set-up with the
// median of its repeats' time per call at capacity.
func TestRemotingGroupOf(t *testing.T) {
	t.Parallel()
	groups := []RemotingGroupSettings{
		{Replicas: 2, Repeat: 1, ReplicaServiceMS: 3, CPUPeriodMS: 2},
		{Replicas: 4, Repeat: 1, ReplicaServiceMS: 5, CPUPeriodMS: 4},
		{Replicas: 4, Repeat: 2, ReplicaServiceMS: 4, CPUPeriodMS: 4},
		{Replicas: 4, Repeat: 3, ReplicaServiceMS: 4.5, CPUPeriodMS: 4},
	}
	g, ok := remotingGroupOf(groups, 4)
	if !ok || g.Repeat != 1 || g.ReplicaServiceMS != 4.5 || g.CPUPeriodMS != 4 {
		t.Errorf("group of 4: %+v, %v; want repeat 1's with 4.5 ms", g, ok)
	}
	if _, ok := remotingGroupOf(groups, 8); ok {
		t.Errorf("a group of 8 found")
	}
}
