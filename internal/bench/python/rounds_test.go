package python

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// seg is a segment of calls calls taking perCallUS each, with the
// replica's CPU time per call.
func seg(arm string, calls int64, perCallUS, cpuUS float64) Measure {
	return Measure{Segment: Segment{Arm: arm, Calls: calls, ElapsedS: float64(calls) * perCallUS / 1e6, MeanUS: perCallUS, P50US: perCallUS, P99US: 2 * perCallUS}, ReplicaCPUUS: cpuUS}
}

// round is a round whose direct arm takes as long as the monitored one.
func round(plain, control, monitored, bound float64) Round {
	return Round{
		ArmPlain:     seg(ArmPlain, 1000, plain, 300),
		ArmControl:   seg(ArmControl, 1000, control, 300),
		ArmMonitored: seg(ArmMonitored, 1000, monitored, 312),
		ArmDirect:    seg(ArmDirect, 1000, monitored, 313),
		ArmBound:     seg(ArmBound, 1000, bound, 315),
	}
}

func TestRatiosAreMediansOfPerRoundRatios(t *testing.T) {
	t.Parallel()
	rounds := []Round{
		round(500, 500, 520, 560),    // monitor 1.04, bound 520/560
		round(400, 420, 480, 480),    // monitor 1.20, bound 1.00
		round(1000, 990, 1010, 1100), // monitor 1.01, bound 1010/1100
	}
	r := ratiosOf(rounds)
	near := func(what string, got Num, want float64) {
		t.Helper()
		if math.Abs(float64(got)-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("monitor time median", r.MonitorTime.Median, 1.04)
	near("monitor CPU median", r.MonitorCPU.Median, 1.04)
	near("bound median", r.BoundThroughput.Median, 520.0/560)
	near("control median", r.ControlTime.Median, 1.0)
	near("monitor p50 median", r.MonitorP50.Median, 1.04) // the fake segments' p50 is their mean
	near("bound p50 median", r.BoundP50.Median, 520.0/560)
	near("round 2 monitor", r.MonitorTime.PerRound[1], 1.2)
	if len(r.BoundThroughput.PerRound) != 3 {
		t.Fatalf("per round %v", r.BoundThroughput.PerRound)
	}
	near("monitor cost", Num(r.MonitorCost()), 0.04)
	if !r.MonitorMet() {
		t.Error("a cost of 4% must meet ≤ 5%")
	}
	if r.BoundMet() {
		t.Errorf("a bound ratio of %.3f must miss ≥ 0.95", r.BoundThroughput.Median)
	}
	near("noise", Num(r.Noise()), 0)
}

func TestRatiosUnknownCPU(t *testing.T) {
	t.Parallel()
	rd := round(500, 500, 500, 500)
	m := rd[ArmPlain]
	m.ReplicaCPUUS = math.NaN()
	rd[ArmPlain] = m
	r := ratiosOf([]Round{rd})
	if r.MonitorCPU.Median.Known() {
		t.Errorf("CPU ratio %v from an unknown CPU time, want unknown", r.MonitorCPU.Median)
	}
	b, err := json.Marshal(r.MonitorCPU)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"median":null,"per_round":[null]}` {
		t.Errorf("JSON %s, want nulls for unknown figures", b)
	}
	if rows := rowsOf([]Round{rd}); rows[0].ReplicaCPUUSPerCall.Known() || !rows[2].ReplicaCPUUSPerCall.Known() {
		t.Errorf("replica CPU: plain %v (want unknown), monitored %v (want known)", rows[0].ReplicaCPUUSPerCall, rows[2].ReplicaCPUUSPerCall)
	}
}

func TestRowsSumCallsAndTakeMedians(t *testing.T) {
	t.Parallel()
	rounds := []Round{round(500, 500, 520, 540), round(400, 420, 480, 480), round(1000, 990, 1010, 1100)}
	m := rounds[1][ArmBound]
	m.Errors, m.FirstError = 2, "status 503"
	rounds[1][ArmBound] = m
	rows := rowsOf(rounds)
	if len(rows) != len(Arms) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, row := range rows {
		if row.Name != Arms[i] || row.Calls != 3000 || row.Rounds != 3 {
			t.Errorf("row %d: %+v", i, row)
		}
	}
	b := rows[4]
	if b.Replica != ReplicaClient || b.Client != "httpx+BindingTransport" || b.Errors != 2 || b.FirstError != "status 503" {
		t.Errorf("bound row %+v", b)
	}
	if got := float64(b.ThroughputRPS); math.Abs(got-1e6/540) > 1e-6 {
		t.Errorf("bound throughput %v, want the median round's %v", got, 1e6/540)
	}
	// CPU per call over all calls, errors included: (1000·315·2 + 1002·315)/3002.
	if got := float64(b.ReplicaCPUUSPerCall); math.Abs(got-315) > 1e-9 {
		t.Errorf("bound replica CPU %v, want 315", got)
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		rounds          []Round
		failed          string // an arm with a failed call
		monitor, client bench.TargetStatus
	}{
		{"both met", []Round{round(500, 500, 510, 520)}, "", bench.Met, bench.Met},
		{"monitor missed", []Round{round(500, 500, 530, 540)}, "", bench.Missed, bench.Met},
		{"client missed", []Round{round(500, 500, 510, 560)}, "", bench.Met, bench.Missed},
		{"failed bound call", []Round{round(500, 500, 510, 520)}, ArmBound, bench.Met, bench.Unknown},
		{"failed plain call", []Round{round(500, 500, 510, 520)}, ArmPlain, bench.Unknown, bench.Met},
		{"no rounds", nil, "", bench.Unknown, bench.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.failed != "" {
				m := tc.rounds[0][tc.failed]
				m.Errors = 1
				tc.rounds[0][tc.failed] = m
			}
			rep := bench.NewReport("t")
			judge(rep, rowsOf(tc.rounds), ratiosOf(tc.rounds))
			ts := rep.Targets()
			if len(ts) != 2 || ts[0].Name != TargetMonitor || ts[1].Name != TargetClient {
				t.Fatalf("targets %+v", ts)
			}
			if ts[0].Status != tc.monitor || ts[1].Status != tc.client {
				t.Errorf("statuses %q, %q, want %q, %q (%+v)", ts[0].Status, ts[1].Status, tc.monitor, tc.client, ts)
			}
			if ts[0].Status == bench.Met && !strings.Contains(ts[0].Detail, "A/A control") {
				t.Errorf("monitor detail %q lacks the A/A control", ts[0].Detail)
			}
		})
	}
}

func TestCheckRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    Python
		want string
	}{
		{Python{Calls: -1, WorkUS: 100}, "--calls -1"},
		{Python{Rounds: -2, WorkUS: 100}, "--rounds -2"},
		{Python{WorkUS: -5}, "--work-us -5"},
		{Python{WorkUS: math.NaN()}, "--work-us NaN"},
	} {
		err := tc.p.Check(bench.Quick)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%+v) = %v, want an error naming %q", tc.p, err, tc.want)
		}
	}
	if err := (&Python{WorkUS: 100}).Check(bench.Quick); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestMissingInterpreterNamesHowToMakeIt(t *testing.T) {
	t.Chdir(t.TempDir()) // no build/venv here
	_, err := findInterpreter(t.Context(), "")
	if err == nil || !strings.Contains(err.Error(), venvCommand) || !strings.Contains(err.Error(), "--python") {
		t.Errorf("error %v, want one naming %q and --python", err, venvCommand)
	}
	_, err = findInterpreter(t.Context(), "/nonexistent/python")
	if err == nil || !strings.Contains(err.Error(), `--python "/nonexistent/python"`) {
		t.Errorf("error %v, want one naming the flag and its value", err)
	}
}

// The client target compares bound with direct (their shared replica),
// not with the monitored arm, and the monitor target monitored with plain.
func TestRatiosPairTheRightArms(t *testing.T) {
	t.Parallel()
	rd := round(500, 500, 600, 400)
	d := rd[ArmDirect]
	d.ElapsedS, d.P50US = 0.38, 380 // 380 µs per call
	rd[ArmDirect] = d
	r := ratiosOf([]Round{rd})
	if got, want := float64(r.BoundThroughput.Median), 380.0/400; math.Abs(got-want) > 1e-9 {
		t.Errorf("bound/direct %v, want %v", got, want)
	}
	if got, want := float64(r.BoundP50.Median), 380.0/400; math.Abs(got-want) > 1e-9 {
		t.Errorf("bound/direct p50 %v, want %v", got, want)
	}
	if got := float64(r.MonitorTime.Median); math.Abs(got-1.2) > 1e-9 {
		t.Errorf("monitored/plain %v, want 1.2", got)
	}
}
