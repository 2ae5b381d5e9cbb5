package replication

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// The RTT growth target is judged on the testbed only, from the 1 plain
// client rows of 2 and 4 replicas.
func TestReportGrowthTarget(t *testing.T) {
	t.Parallel()
	rtt := func(replicas int, ms float64) row {
		return row{Config: configReplicated, Kind: plain, Replicas: replicas, Clients: 1, RTTP50MS: ms}
	}
	for _, tc := range []struct {
		name      string
		rows      []row
		onTestbed bool
		want      bench.TargetStatus
		detail    string
	}{
		{"loopback", []row{rtt(2, 1), rtt(4, 1)}, false, bench.Unknown, "measured on the testbed (--testbed)"},
		{"testbed, +20% exactly", []row{rtt(2, 2), rtt(4, 2.4)}, true, bench.Met, "2.000 → 2.400 ms, +20.0%"},
		{"testbed, faster", []row{rtt(2, 2), rtt(4, 1.5)}, true, bench.Met, "-25.0%"},
		{"testbed, +25%", []row{rtt(2, 2), rtt(4, 2.5)}, true, bench.Missed, "2.000 → 2.500 ms, +25.0%"},
		{"testbed, no 4-replica point", []row{rtt(2, 2), rtt(3, 2)}, true, bench.Unknown, "--replicas below 4"},
		{"testbed, only aware rows", []row{{Config: configReplicated, Kind: aware, Replicas: 2, Clients: 1, RTTP50MS: 2}, {Config: configReplicated, Kind: aware, Replicas: 4, Clients: 1, RTTP50MS: 2}}, true, bench.Unknown, "no 4-replica point"},
		{"testbed, 2 clients only", []row{{Config: configReplicated, Kind: plain, Replicas: 2, Clients: 2, RTTP50MS: 2}, {Config: configReplicated, Kind: plain, Replicas: 4, Clients: 2, RTTP50MS: 9}}, true, bench.Unknown, "no 4-replica point"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := bench.NewReport("t")
			reportGrowth(rep, tc.rows, tc.onTestbed)
			ts := rep.Targets()
			if len(ts) != 1 || ts[0].Name != growthTarget {
				t.Fatalf("targets = %+v, want the growth target alone", ts)
			}
			if ts[0].Status != tc.want || !strings.Contains(ts[0].Detail, tc.detail) {
				t.Fatalf("growth target = %s (%s), want %s with %q", ts[0].Status, ts[0].Detail, tc.want, tc.detail)
			}
		})
	}
}

// On the testbed the report leaves the loopback-only targets (the relay
// topologies, the engine's throughput) unjudged and judges the growth;
// on loopback it judges them and not the growth.
func TestReportOnTestbedAndLoopback(t *testing.T) {
	t.Parallel()
	s := settings{Invocations: 10, Discard: 1, Clients: 1, Replicas: 4}
	rows := []row{
		{Config: configReplicated, Kind: plain, Replicas: 2, Clients: 1, RTTP50MS: 2},
		{Config: configReplicated, Kind: plain, Replicas: 4, Clients: 1, RTTP50MS: 2.2},
		{Config: configPerRequest, Kind: plain, Replicas: 1, Clients: 1, RTTP50MS: 0.5},
	}
	tp := throughput{Clients: 8, Replicas: 2, RPS: 400}
	status := func(rep *bench.Report) map[string]bench.TargetStatus {
		out := map[string]bench.TargetStatus{}
		for _, tg := range rep.Targets() {
			out[tg.Name] = tg.Status
		}
		return out
	}
	const callersTarget = "a deduplicating callee saw each outgoing call exactly once, and the replicated relays' states are equal"
	on := status(report(s, rows, tp, callersCheck{}, nil, false, true))
	if on[growthTarget] != bench.Met || on[throughputTarget] != bench.Unknown || on[callersTarget] != bench.Unknown {
		t.Fatalf("testbed targets: %v; want the growth met, the throughput and the callers not measured", on)
	}
	off := status(report(s, rows, tp, callersCheck{}, nil, false, false))
	if off[growthTarget] != bench.Unknown || off[throughputTarget] != bench.Missed || off[callersTarget] != bench.Missed {
		t.Fatalf("loopback targets: %v; want the growth not measured, the throughput and the callers missed", off)
	}
}

func TestCheckRefusesTestbedWithFaultInjection(t *testing.T) {
	t.Parallel()
	err := (&Replication{Testbed: true, FailpointBinary: "/x/fulcrum-fp"}).Check(bench.Quick)
	if err == nil || !strings.Contains(err.Error(), "--failpoint-binary /x/fulcrum-fp with --testbed") {
		t.Fatalf("Check = %v, want --testbed with --failpoint-binary refused", err)
	}
	if err := (&Replication{Testbed: true}).Check(bench.Quick); err != nil {
		t.Fatalf("Check(--testbed) = %v", err)
	}
}

// The forwarder passes HTTP calls, a keep-alive connection's several
// ones included, to its target, and close ends its connections and
// goroutines (TestMain's goleak).
func TestForwarderPassesCallsAndCloses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(body))
	}))
	defer srv.Close()
	f, err := newForwarder(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}, Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, want := range []string{"POST /a x", "POST /b yz"} {
		path, body := strings.Fields(want)[1], strings.Fields(want)[2]
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:"+f.port+path, strings.NewReader(body))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != want {
			t.Fatalf("call %d: %q, want %q", i, got, want)
		}
	}
	f.close() // with the client's idle connection still open
	hc.CloseIdleConnections()
	if _, err := hc.Get("http://127.0.0.1:" + f.port + "/"); err == nil {
		t.Fatal("a call after close went through")
	}
}
