package effectiveness

import (
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// countOmniCalls counts each call in the second it was meant to be sent,
// for the replica behind the agent that answered, with its latency from
// the intended time; a change of replica is a rebind, a failed call is
// counted as failed.
func TestCountOmniCalls(t *testing.T) {
	start := time.Unix(1000, 0)
	log := newServeLog(start)
	out := strings.Join([]string{
		`noise`,
		`{"call":1,"ok":true,"result":true,"us":100,"late_us":0,"peer":"giop:tcp:127.0.0.1:4001","sends":1}`,
		`{"call":2,"ok":true,"result":true,"us":100,"late_us":50,"peer":"giop:tcp:127.0.0.1:4001","sends":1}`,
		// Call 3 is meant at 1 s (rate 2/s): the second second.
		`{"call":3,"ok":true,"result":true,"us":200,"late_us":0,"peer":"giop:tcp:127.0.0.1:4002","sends":2}`,
		`{"call":4,"ok":false,"error":"COMM_FAILURE","minor":"0x41540002","us":90,"late_us":0,"peer":"","sends":1}`,
		`{"summary":true,"calls":4,"ok":3}`,
	}, "\n")
	rec, lag := stats.NewRecorder(), stats.NewRecorder()
	byAddr := map[string]string{"127.0.0.1:4001": "r1", "127.0.0.1:4002": "r2"}
	if err := countOmniCalls([]byte(out), start, 2, protocol.OnDemand, byAddr, log, rec, lag); err != nil {
		t.Fatal(err)
	}
	tr, stray := log.snapshot([]string{"r1", "r2"}, 2)
	if stray != 0 {
		t.Errorf("stray %d", stray)
	}
	if tr.Served[0][0] != 2 || tr.Served[0][1] != 0 || tr.Served[1][1] != 1 {
		t.Errorf("served %v, want [[2 0] [0 1]]", tr.Served)
	}
	if tr.Rebinds[1] != 1 || tr.Rebinds[0] != 0 {
		t.Errorf("rebinds %v, want one in second 1", tr.Rebinds)
	}
	if tr.Failed[1] != 1 {
		t.Errorf("failed %v, want one in second 1", tr.Failed)
	}
	if rec.Count() != 3 || lag.Count() != 4 {
		t.Errorf("%d latencies, %d lags; want 3 and 4", rec.Count(), lag.Count())
	}
	// 100, 150 (100 + 50 late) and 200 µs.
	if s := rec.Summary(); s.Max != 200 || s.Mean != 150 {
		t.Errorf("latencies %+v, want mean 150, max 200 µs", s)
	}
	if kinds := log.errorKinds(); !strings.Contains(kinds, "CORBA COMM_FAILURE 0x41540002") {
		t.Errorf("error kinds %q", kinds)
	}

	// Per-request: every call is the front door's.
	log = newServeLog(start)
	if err := countOmniCalls([]byte(out), start, 2, protocol.PerRequest, byAddr, log, stats.NewRecorder(), stats.NewRecorder()); err != nil {
		t.Fatal(err)
	}
	if tr, stray := log.snapshot([]string{"r1", "r2"}, 2); stray != 3 || tr.Rebinds[1] != 0 {
		t.Errorf("per-request: stray %d (want 3, the front door's), rebinds %v", stray, tr.Rebinds)
	}

	for _, bad := range []string{"", `{"call":0,"ok":true}`, `{"call":1,"ok":tru`} {
		if err := countOmniCalls([]byte(bad), start, 2, protocol.OnDemand, byAddr, newServeLog(start), stats.NewRecorder(), stats.NewRecorder()); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
