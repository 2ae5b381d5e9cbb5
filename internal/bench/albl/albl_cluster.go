package albl

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// The albl cluster: the ALBL paper's web cluster (§5) on the testbed. Two NGINX
// replicas, each in a network namespace of its own with a CPU quota
// (cgroup) and, in scenario II, replica 1's link shaped by tbf; each with
// "fulcrum agent http" beside it in its namespace, reading NGINX's
// stub_status over the namespace's loopback and the replica's cgroup CPU
// time, and pushing reports to the balancer over the replica's own link.
// The balancer and the clients run in the root namespace.

// alblGroup is the group the cluster balances.
const alblGroup = "web"

// alblCluster is one scenario's running cluster.
type alblCluster struct {
	tb       *testbed.Testbed
	replicas []*testbed.Replica
	nginx    []*bench.Proc
	agents   []*bench.Proc
	hog      *testbed.Hog
	bal      *bench.Balancer
	door     string
}

// close stops the hog and removes the testbed (whatever still runs in
// the replicas is killed); the balancer and agents are the Env's.
func (c *alblCluster) close() {
	if c.hog != nil {
		c.hog.Stop()
	}
	for _, p := range c.agents {
		p.Stop(2 * time.Second) // deregister
	}
	if c.tb != nil {
		_ = c.tb.Close()
	}
}

// startALBLCluster builds sc's cluster: two replicas of cpu cores each,
// their agents reporting load.
func startALBLCluster(ctx context.Context, env *bench.Env, sc alblScenario, cpu float64, load string) (c *alblCluster, err error) {
	if env.NGINX.Path == "" {
		return nil, fmt.Errorf("bench: albl serves its objects with NGINX: %s", env.NGINX.Missing)
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("bench: albl starts the agents in the replicas' namespaces with nsenter (util-linux): %w", err)
	}
	tb, err := testbed.New(testbed.Options{})
	if err != nil {
		return nil, fmt.Errorf("bench: albl needs the testbed (network namespaces, cgroups): %w", err)
	}
	c = &alblCluster{tb: tb}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	for i := range 2 {
		spec := testbed.ReplicaSpec{CPU: cpu}
		if i == 0 && sc.Shaped {
			spec.Link = &alblShapedLink
		}
		r, err := tb.AddReplica(spec)
		if err != nil {
			return c, err
		}
		c.replicas = append(c.replicas, r)
		p, err := env.StartReplicaNGINX(ctx, r, i+1, bench.NGINXExtra{})
		if err != nil {
			return c, err
		}
		c.nginx = append(c.nginx, p)
	}
	if sc.Hog {
		if c.hog, err = c.replicas[0].StartHog(); err != nil {
			return c, err
		}
	}
	if c.bal, err = startALBLBalancer(ctx, env); err != nil {
		return c, err
	}
	c.door = c.bal.FrontDoor(alblGroup)
	for _, r := range c.replicas {
		_, port, _ := strings.Cut(strings.TrimPrefix(c.bal.Admin, "http://"), ":")
		admin := "http://" + r.Gateway().String() + ":" + port
		p, err := env.StartReplicaAgent(ctx, nsenter, r, admin, alblGroup, load, nil)
		if err != nil {
			return c, err
		}
		c.agents = append(c.agents, p)
	}
	if err := c.bal.WaitReady(ctx, alblGroup, len(c.replicas), true); err != nil {
		return c, err
	}
	return c, nil
}

// alblShapedLink is scenario II's congested link (the ALBL paper §5.2): tbf at
// 0.5 Mbit/s, a queue of 10 ms, a 2 KB burst, on what replica 1 sends.
var alblShapedLink = testbed.Link{Rate: "500kbit", Burst: "2kb", Latency: 10 * time.Millisecond}

// alblGroupSpec is the albl group: per request (a web switch),
// round-robin until a run patches its strategy, and no health checking —
// no active probes and no passive ejection — so that the strategies alone
// decide where calls go, as with the ALBL paper's LVS switch.
var alblGroupSpec = map[string]any{
	"front_door": "127.0.0.1:0", "binding": "per-request", "strategy": "round-robin", "report_interval": "500ms",
	"health":   map[string]any{"passive": map[string]any{"consecutive_failures": -1}},
	"timeouts": map[string]any{"connect": "10s", "request": "60s", "idle": "90s"},
}

// alblSetStrategy switches the group's strategy and parameters at run time
// (PATCH /v1/groups/{group}).
func alblSetStrategy(ctx context.Context, b *bench.Balancer, group, name string, params map[string]any) error {
	if err := b.Send(ctx, http.MethodPatch, "/v1/groups/"+group, map[string]any{"strategy": name, "params": params}); err != nil {
		return fmt.Errorf("bench: setting strategy %s: %w", name, err)
	}
	return nil
}

// startALBLBalancer starts "fulcrum serve" for the testbed and makes the
// albl group (alblGroupSpec) through its admin API.
func startALBLBalancer(ctx context.Context, env *bench.Env) (*bench.Balancer, error) {
	b, err := env.StartTestbedBalancer(ctx)
	if err != nil {
		return nil, err
	}
	// The group is made through the admin API, not the config file, so
	// that the runs can patch its strategy without the balancer warning
	// that the config will revert it.
	door, err := b.AddGroup(ctx, alblGroup, alblGroupSpec)
	if err != nil {
		b.Proc.Stop(0)
		return nil, err
	}
	env.Logf("albl: front door %s", door)
	return b, nil
}
