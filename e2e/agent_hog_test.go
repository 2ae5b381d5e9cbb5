//go:build linux

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent/nginxreplica"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// TestAgentReportsAHogBesideNGINX: two testbed replicas of half a core,
// each a real NGINX with `fulcrum agent http --pid <NGINX> --cgroup <its
// cgroup>` beside it (in the replica's network namespace, outside its
// cgroup), and a CPU hog in the first replica's cgroup. The first agent
// reports the hog as cpu_other and only NGINX's own CPU as cpu; the
// second reports no other work. ett, per-request, then sends the calls
// to the second replica.
func TestAgentReportsAHogBesideNGINX(t *testing.T) {
	needTestbed(t)
	nginxBin := needTool(t, "nginx")
	nsenter := needTool(t, "nsenter")
	t.Parallel()
	reps, bal := startHogCluster(t, testbed.Options{}, 0.5, "web")
	for _, r := range reps {
		if r.AcctDir() == "" {
			t.Fatalf("replica %s has no CPU accounting directory", r.Name())
		}
	}

	const port = "8080"
	urls := make([]string, len(reps))
	for i, r := range reps {
		urls[i] = "http://" + net.JoinHostPort(r.Addr().String(), port)
		conf := writeNGINXReplica(t, i+1, port)
		ng := proctest.Start(t, fmt.Sprintf("nginx %d", i+1), proctest.Options{Wrap: r.Wrap}, nginxBin, "-c", conf, "-e", "stderr")
		waitServing(t, urls[i]+"/healthz")
		local := "http://127.0.0.1:" + port
		proctest.Start(t, fmt.Sprintf("agent %d", i+1), proctest.Options{}, nsenter, "--net=/run/netns/"+r.Name(), "--",
			fulcrumBin, "agent", "http", "--target", local, "--address", urls[i],
			"--register", bal.admin, "--group", "web", "--stub-status", local+"/nginx_status",
			"--pid", strconv.Itoa(ng.Pid()), "--cgroup", r.AcctDir(), "--cpus", "0.5", "--load", "cpu")
	}

	ctx := testContext(t, time.Minute)
	hc := apiClient(t)
	g := waitReported(ctx, t, hc, bal.admin, "web", 2)
	var hogged, quiet replicaStatus
	proctest.Poll(ctx, t, "the hog as cpu_other on replica 1 only, and NGINX's own cpu low on both", func() (bool, string) {
		var err error
		if g, err = getGroup(ctx, hc, bal.admin, "web"); err != nil {
			return false, err.Error()
		}
		var ok1, ok2 bool
		hogged, ok1 = g.replicaAt(urls[0])
		quiet, ok2 = g.replicaAt(urls[1])
		if !ok1 || !ok2 {
			return false, fmt.Sprintf("replicas %v", g.Replicas)
		}
		h, q := hogged.Metrics, quiet.Metrics
		hOther, ok1 := h["cpu_other"]
		qOther, ok2 := q["cpu_other"]
		// The hog takes what NGINX leaves of the half core: cpu_other
		// near 1 (a share of --cpus). NGINX serves only health checks
		// and stub_status reads.
		return ok1 && ok2 && hOther > 0.6 && qOther < 0.1 && h["cpu"] < 0.2 && q["cpu"] < 0.2,
			fmt.Sprintf("hogged %v, quiet %v", h, q)
	})

	const calls = 100
	served := map[string]int{}
	for range calls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.Advertise+"/1k", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(body) != 1024 {
			t.Fatalf("GET /1k: status %d, %d bytes, %v", resp.StatusCode, len(body), err)
		}
		served[resp.Header.Get("X-Replica")]++
	}
	t.Logf("hogged replica: cpu %.3f, cpu_other %.3f; quiet: cpu %.3f, cpu_other %.3f; calls served: hogged %d, quiet %d",
		hogged.Metrics["cpu"], hogged.Metrics["cpu_other"], quiet.Metrics["cpu"], quiet.Metrics["cpu_other"], served["1"], served["2"])
	if served["2"] < calls*9/10 {
		t.Errorf("the replica without a hog served %d of %d calls (the hogged one %d), want at least 90%%", served["2"], calls, served["1"])
	}
}

// writeNGINXReplica writes the config (nginxreplica's, the one
// docs/agents.md shows) of a one-process NGINX (the whole of it in the
// replica's cgroup) listening on port in its namespace: /1k
// (1 KiB), /healthz, stub_status for the namespace's loopback, and
// X-Replica: index on every answer. It returns the config's path.
func writeNGINXReplica(t *testing.T, index int, port string) string {
	t.Helper()
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(www, "1k"), make([]byte, 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	c := nginxreplica.Config{
		Dir: dir, Listen: port, Index: index, ErrorLog: "stderr",
		WorkerConnections: 256, OneProcess: true,
	}
	if os.Geteuid() == 0 {
		c.User = "root" // NGINX reads the test's private temp dir
	}
	conf, err := nginxreplica.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitServing waits until url answers 200.
func waitServing(t *testing.T, url string) {
	t.Helper()
	ctx := testContext(t, 20*time.Second)
	hc := &http.Client{Timeout: time.Second}
	proctest.Poll(ctx, t, url+" answering 200", func() (bool, string) {
		resp, err := hc.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}
