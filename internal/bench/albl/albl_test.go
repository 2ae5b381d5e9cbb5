package albl

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

func TestALBLSchedule(t *testing.T) {
	t.Parallel()
	s := alblSchedule(200, time.Second)
	if len(s) != 200 || s[0] != 0 || s[1] != 5*time.Millisecond || s[199] != 995*time.Millisecond {
		t.Fatalf("schedule of 200/s over 1s: %d calls, first %v, %v, last %v", len(s), s[0], s[1], s[len(s)-1])
	}
	if s := alblSchedule(0, time.Second); s != nil {
		t.Errorf("rate 0: %v", s)
	}
	if got := sweep(20, 1970, 50); len(got) != 40 || got[0] != 20 || got[39] != 1970 {
		t.Errorf("scenario I sweep: %d rates, %v … %v; want the paper's 40 from 20 to 1970", len(got), got[0], got[len(got)-1])
	}
}

// TestALBLStepCountsAnswersTimeoutsAndReplicas runs an open-loop step
// against a real HTTP server whose every fourth call is too slow for the
// client timeout and every other one is served by "replica 1".
func TestALBLStepCountsAnswersTimeoutsAndReplicas(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		if k%4 == 0 {
			select { // past the client's timeout
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set(bench.ServedHeader, map[bool]string{true: "1", false: "2"}[k%2 == 1])
		_, _ = w.Write(bench.Payload(1024))
	}))
	defer srv.Close()
	defer close(release)
	hc := alblClient(200 * time.Millisecond)
	st, err := runALBLStep(context.Background(), hc, srv.URL+"/1k", 1024, 100, 400*time.Millisecond, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != 40 {
		t.Errorf("sent %d, want 40 (100/s for 0.4s)", st.Sent)
	}
	if st.Answered+st.Errors != st.Sent || st.Errors != 10 || st.ErrorKinds["timeout"] != 10 {
		t.Errorf("answered %d, errors %d (%v); want 30 answered and 10 timeouts", st.Answered, st.Errors, st.ErrorKinds)
	}
	if st.Bytes != st.Answered*1024 || st.Rec.Count() != st.Answered {
		t.Errorf("bytes %d, latencies %d for %d answers", st.Bytes, st.Rec.Count(), st.Answered)
	}
	if st.Served["1"]+st.Served["2"] != st.Answered || st.Served["1"] == 0 || st.Served["2"] == 0 {
		t.Errorf("served by replica %v, want both and %d in all", st.Served, st.Answered)
	}
	if got := st.ErrorRate(); got != 0.25 {
		t.Errorf("error rate %v, want 0.25", got)
	}
	if kbs := st.ThroughputKBs(); kbs != 30/0.4 {
		t.Errorf("throughput %v KB/s, want %v", kbs, 30/0.4)
	}
}

func TestALBLStepShortAnswerIsAnError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(bench.Payload(100)) }))
	defer srv.Close()
	st, err := runALBLStep(context.Background(), alblClient(time.Second), srv.URL, 1024, 50, 100*time.Millisecond, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent == 0 || st.Errors != st.Sent || st.ErrorKinds["short answer"] != st.Sent {
		t.Errorf("sent %d, errors %v; want every call a short answer", st.Sent, st.ErrorKinds)
	}
}

func TestALBLPlan(t *testing.T) {
	t.Parallel()
	x := newALBL()
	scs, runs, err := x.plan(bench.Quick)
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 3 || len(runs) != 9 {
		t.Fatalf("%d scenarios, %d strategies; want 3 and 9", len(scs), len(runs))
	}
	for _, sc := range scs {
		if len(sc.Rates) != 4 {
			t.Errorf("scenario %s: %d quick rates, want 4", sc.Name, len(sc.Rates))
		}
	}
	if scs[1].Timeout != 5*time.Second || !scs[1].Shaped || scs[1].ObjectBytes != 10240 || !scs[2].Hog {
		t.Errorf("scenario II/III settings: %+v / %+v", scs[1].alblScenario, scs[2].alblScenario)
	}
	x = &ALBL{CPU: 0.5, Scenarios: []string{"ii"}, Strategies: []string{"albl-low", "round-robin"}, RatesII: []float64{5, 15}}
	scs, runs, err = x.plan(bench.Full)
	if err != nil || len(scs) != 1 || scs[0].Name != "II" || len(scs[0].Rates) != 2 || runs[0].Label != "albl-low" || runs[0].Params["threshold"] != alblLowThreshold {
		t.Errorf("a chosen plan: %+v, %+v, %v", scs, runs, err)
	}
	for _, tc := range []struct {
		x    ALBL
		want string
	}{
		{ALBL{CPU: 0.5, Scenarios: []string{"IV"}}, "--scenarios"},
		{ALBL{CPU: 0.5, Scenarios: []string{"I", "i"}}, "each scenario once"},
		{ALBL{CPU: 0.5, Strategies: []string{"random"}}, "--strategies"},
		{ALBL{CPU: 0.5, RatesI: []float64{-1}}, "--rates-i"},
		{ALBL{CPU: 0.5, Step: 10 * time.Millisecond}, "--step"},
		{ALBL{CPU: 1.5}, "--cpu"},
		{ALBL{CPU: 0.5, Load: "memory"}, "--load"},
	} {
		if err := tc.x.Check(bench.Quick); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one about %s", tc.x, err, tc.want)
		}
	}
}

func TestJudgeALBL(t *testing.T) {
	t.Parallel()
	row := func(sc, name string, rate, kbs, mean, errs float64) ALBLRow {
		return ALBLRow{Scenario: sc, Name: name, Rate: rate, ThroughputKBs: kbs, LatencyMeanMS: mean, ErrorRate: errs, Answered: 1}
	}
	rows := []ALBLRow{
		row("I", "round-robin", 100, 100, 1, 0), row("I", "prequal", 100, 96, 1, 0),
		row("I", "round-robin", 200, 200, 1, 0), row("I", "albl-low", 200, 189, 1, 0), // 0.945: missed
		row("II", "least-connections", 60, 500, 80, 0.01), row("II", "least-connections", 120, 500, 100, 0.10),
		row("II", "albl-low", 120, 600, 90, 0.10), row("II", "peak-ewma", 120, 600, 50, 0.12),
		row("III", "least-connections", 120, 120, 10, 0), row("III", "round-robin", 120, 120, 1, 0),
		row("III", "least-loaded", 120, 120, 8.5, 0), row("III", "prequal", 120, 120, 2, 0.01),
	}
	rep := bench.NewReport("x")
	judgeALBL(rep, rows)
	ts := rep.Targets()
	if len(ts) != 3 {
		t.Fatalf("targets %+v", ts)
	}
	if ts[0].Status != bench.Missed || !strings.Contains(ts[0].Detail, "albl-low at 200") {
		t.Errorf("scenario I: %+v", ts[0])
	}
	// albl-low matches least-connections' errors and beats its latency;
	// peak-ewma is faster but errs more.
	if ts[1].Status != bench.Met || !strings.Contains(ts[1].Detail, "albl-low") {
		t.Errorf("scenario II: %+v", ts[1])
	}
	// least-loaded: 8.5 > 0.8 × 10; prequal errs more; round-robin is a
	// baseline, not a candidate.
	if ts[2].Status != bench.Missed {
		t.Errorf("scenario III: %+v", ts[2])
	}
}
