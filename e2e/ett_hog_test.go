//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// TestETTAvoidsAReplicaSharingItsCPUWithAHog: two testbed replicas of a
// quarter core each, a CPU hog in the first one's cgroup. The first
// replica's monitor reads its cgroup's CPU time beyond its own process's
// and reports it as cpu_other; ett, per-request, sends the calls to the
// second replica. Real processes, cgroups and namespaces throughout.
func TestETTAvoidsAReplicaSharingItsCPUWithAHog(t *testing.T) {
	needTestbed(t)
	t.Parallel()
	reps, bal := startHogCluster(t, testbed.Options{CPUPeriod: 4 * time.Millisecond}, 0.25, "hog")
	for i, r := range reps {
		p := proctest.Start(t, fmt.Sprintf("replica %d", i+1), proctest.Options{Env: []string{"GOMAXPROCS=1"}, Wrap: r.Wrap}, fulcrumBin,
			"backend", "prime", "--listen", net.JoinHostPort(r.Addr().String(), "8080"),
			"--register", bal.admin, "--group", "hog", "--load", "cpu")
		ctx := testContext(t, 20*time.Second)
		p.WaitOutput(ctx, t, p.Stdout, listeningLine)
	}

	ctx := testContext(t, time.Minute)
	hc := apiClient(t)
	g := waitReported(ctx, t, hc, bal.admin, "hog", 2)
	addr := func(r *testbed.Replica) string { return "http://" + net.JoinHostPort(r.Addr().String(), "8080") }
	// The hog's CPU shows as the first replica's cpu_other, and nothing
	// else's as the second's.
	proctest.Poll(ctx, t, "cpu_other above 0.3 on the hogged replica and below 0.1 on the other", func() (bool, string) {
		var err error
		g, err = getGroup(ctx, hc, bal.admin, "hog")
		if err != nil {
			return false, err.Error()
		}
		hogged, _ := g.replicaAt(addr(reps[0]))
		quiet, _ := g.replicaAt(addr(reps[1]))
		h, ok1 := hogged.Metrics["cpu_other"]
		q, ok2 := quiet.Metrics["cpu_other"]
		return ok1 && ok2 && h > 0.3 && q < 0.1, fmt.Sprintf("hogged %v, quiet %v", hogged.Metrics, quiet.Metrics)
	})
	hogged, _ := g.replicaAt(addr(reps[0]))
	quiet, _ := g.replicaAt(addr(reps[1]))

	const calls = 100
	served := map[string]int{}
	for range calls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.Advertise+"/count/30000", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var a primeAnswer
		err = json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /count/30000: status %d, %v", resp.StatusCode, err)
		}
		served[a.ServedBy]++
	}
	t.Logf("cpu_other: hogged %.3f, quiet %.3f; calls served: hogged %d, quiet %d", hogged.Metrics["cpu_other"], quiet.Metrics["cpu_other"], served[hogged.ID], served[quiet.ID])
	// One call at a time: every pick sees both replicas idle, and only
	// the hog's share tells them apart.
	if served[quiet.ID] < calls*9/10 {
		t.Errorf("the replica without a hog served %d of %d calls (the hogged one %d), want at least 90%%", served[quiet.ID], calls, served[hogged.ID])
	}
}

// startHogCluster makes a testbed of two replicas of cpu cores each, a
// CPU hog in the first one's cgroup, and a balancer whose admin API
// listens on the first replica's gateway (which both replicas reach),
// with one per-request ett group named group.
func startHogCluster(t *testing.T, opts testbed.Options, cpu float64, group string) ([2]*testbed.Replica, *balancerProc) {
	t.Helper()
	tb, err := testbed.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("closing the testbed: %v", err)
		}
	})
	var reps [2]*testbed.Replica
	for i := range reps {
		if reps[i], err = tb.AddReplica(testbed.ReplicaSpec{CPU: cpu}); err != nil {
			t.Fatal(err)
		}
	}
	hog, err := reps[0].StartHog()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hog.Stop)

	ln, err := net.Listen("tcp", net.JoinHostPort(reps[0].Gateway().String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	admin := ln.Addr().String()
	ln.Close()
	cfg := writeConfig(t, `admin: %s
data_dir: %q
groups:
  - name: %s
    front_door: 127.0.0.1:0
    binding: per-request
    strategy: ett
    report_interval: 250ms
    health: {path: /healthz, interval: 1s, timeout: 500ms}
`, admin, t.TempDir(), group)
	return reps, startServe(t, "--config", cfg, "--insecure")
}
