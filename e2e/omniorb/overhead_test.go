//go:build linux

package omniorb

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// TestOmniORBOverhead measures, with omniORB C++ on both sides, what
// fulcrum costs a closed-loop client (the TAO paper's overhead experiment with
// real ORBs): K client processes, each making N is_prime calls as fast as
// it can, against three omniORB replicas
//
//   - direct: each client on a replica's own IOR (no balancer);
//   - agent: each client on the reference of a replica's side-car agent
//     (the agent's own cost: every call passes through it);
//   - on-demand: each client on the group's corbaloc reference (forwarded
//     once, then straight to its replica);
//   - per-request: each client on a per-request group's corbaloc (every
//     call proxied by the front door).
//
// The configurations take turns in rounds so that drift in the machine's
// load falls on all alike. It is a measurement, not a check of fulcrum's
// behaviour: it runs only with FULCRUM_OMNIORB_BENCH=1, under the bench
// lock (see docs/giop-omniorb.md for the command and a recorded run).
// FULCRUM_OMNIORB_BENCH_CLIENTS (default "1,4"), _CALLS (default 5000)
// and _ROUNDS (default 3) size it.
func TestOmniORBOverhead(t *testing.T) {
	if os.Getenv("FULCRUM_OMNIORB_BENCH") != "1" {
		t.Skip("a measurement: set FULCRUM_OMNIORB_BENCH=1 (and run it under flock /tmp/fulcrum-bench.lock)")
	}
	o := needORBs(t)
	clientCounts := envInts(t, "FULCRUM_OMNIORB_BENCH_CLIENTS", []int{1, 4})
	calls := envInts(t, "FULCRUM_OMNIORB_BENCH_CALLS", []int{5000})[0]
	rounds := envInts(t, "FULCRUM_OMNIORB_BENCH_ROUNDS", []int{3})[0]
	ctx := testContext(t, 20*time.Minute)

	bal := startBalancer(ctx, t, fmt.Sprintf(`  - name: prime
    protocol: giop
    front_door: %s
    binding: on-demand
    strategy: round-robin
    report_interval: 1h
  - name: perreq
    protocol: giop
    front_door: %s
    binding: per-request
    strategy: round-robin
    report_interval: 1h
  - name: agents
    protocol: giop
    front_door: %s
    binding: on-demand
    strategy: round-robin
    report_interval: 500ms
`, freeAddr(t), freeAddr(t), freeAddr(t)))
	var servers []*server
	var agents []*agent
	for i := range 3 {
		s := o.startServerArgs(ctx, t, fmt.Sprintf("replica %d", i))
		servers = append(servers, s)
		bal.register(ctx, t, "prime", s.ior)
		bal.register(ctx, t, "perreq", s.ior)
		p := proctest.Start(t, fmt.Sprintf("agent %d", i), proctest.Options{}, needFulcrum(t), "agent", "giop",
			"--listen", "127.0.0.1:0", "--target", s.ior, "--register", bal.admin, "--group", "agents")
		a := &agent{Proc: p, listen: p.WaitOutput(ctx, t, p.Stdout, agentListening)[1]}
		a.ref = p.WaitOutput(ctx, t, p.Stdout, agentReference)[1]
		agents = append(agents, a)
	}
	refs := map[string]string{}
	for _, g := range []string{"prime", "perreq"} {
		proctest.Poll(ctx, t, "replicas of "+g+" active", func() (bool, string) {
			st := bal.group(ctx, t, g)
			n := 0
			for _, r := range st.Replicas {
				if r.State == "active" {
					n++
				}
			}
			refs[g] = st.Reference.Corbaloc
			return n == 3, fmt.Sprintf("%+v", st.Replicas)
		})
	}

	// Client i of round r on replica (i+r) mod 3: every replica serves
	// direct and agent clients in turn, as the front door spreads the
	// others.
	round := 0
	configs := []struct {
		name string
		ref  func(i int) string
	}{
		{"direct", func(i int) string { return servers[(i+round)%3].ior }},
		{"agent", func(i int) string { return agents[(i+round)%3].ref }},
		{"on-demand", func(int) string { return refs["prime"] }},
		{"per-request", func(int) string { return refs["perreq"] }},
	}
	type result struct{ rates, means []float64 }
	results := map[string]*result{}
	for ; round < rounds; round++ {
		for _, k := range clientCounts {
			for ci := range configs {
				c := configs[ci]
				if round%2 == 1 {
					c = configs[len(configs)-1-ci]
				}
				rate, mean := runClosedLoop(ctx, t, o, k, calls, c.ref)
				key := fmt.Sprintf("%s/%d", c.name, k)
				if results[key] == nil {
					results[key] = &result{}
				}
				results[key].rates = append(results[key].rates, rate)
				results[key].means = append(results[key].means, mean)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %7s %10s %9s %21s %14s\n", "config", "clients", "calls/s", "vs direct", "rounds' range", "mean latency")
	for _, k := range clientCounts {
		direct := median(results[fmt.Sprintf("direct/%d", k)].rates)
		for _, c := range configs {
			r := results[fmt.Sprintf("%s/%d", c.name, k)]
			rate := median(r.rates)
			fmt.Fprintf(&b, "%-12s %7d %10.0f %9.3f %10.0f-%-10.0f %12.1fµs\n", c.name, k, rate, rate/direct, slices.Min(r.rates), slices.Max(r.rates), median(r.means))
		}
	}
	t.Logf("omniORB C++ clients and servers, %d calls per client, median of %d rounds:\n%s", calls, rounds, b.String())
	var g groupStatus
	bal.do(ctx, t, http.MethodGet, "/v1/groups/perreq", nil, http.StatusOK, &g)
	var proxied uint64
	for _, r := range g.Replicas {
		proxied += r.Counters.Proxied
	}
	if proxied == 0 {
		t.Errorf("the per-request group proxied no call")
	}
}

// runClosedLoop runs k C++ clients at once, each making n calls on
// ref(i), and returns the calls per second of them all (the calls over the
// longest client's time) and the mean call latency in microseconds.
func runClosedLoop(ctx context.Context, t *testing.T, o *orbs, k, n int, ref func(i int) string) (float64, float64) {
	t.Helper()
	ps := make([]*proctest.Proc, k)
	for i := range ps {
		ps[i] = o.startClient(t, cxxClient, "--calls", strconv.Itoa(n), ref(i))
	}
	var longest, sumMean int64
	ok := 0
	for i, p := range ps {
		code, _, sum := clientResult(ctx, t, cxxClient, p, nil)
		if code != 0 || sum.OK != n {
			t.Fatalf("client %d on %.30s...: exit %d, %+v", i, ref(i), code, sum)
		}
		ok += sum.OK
		longest = max(longest, sum.ElapsedUs)
		sumMean += sum.MeanUs
	}
	return float64(ok) / (float64(longest) / 1e6), float64(sumMean) / float64(k)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// envInts reads a comma-separated list of positive integers from the
// environment variable name, or returns def.
func envInts(t *testing.T, name string, def []int) []int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		out = append(out, n)
	}
	return out
}
