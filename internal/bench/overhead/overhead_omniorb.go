package overhead

import (
	"context"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// cfgAgent is the overhead configuration of an omniORB run in which the
// client calls the side-car agent in front of a server, with no balancer:
// the agent's own cost.
const cfgAgent = "agent"

// setUpOmniORB is setUp with omniORB C++ on both sides: every
// configuration has an omniORB Prime server of its own and one omniORB C++
// client process (closed loop, one call at a time) calling is_prime(
// bench.PrimeN):
//
//   - direct: the server's IOR;
//   - agent: the reference of a "fulcrum agent giop" in front of the
//     server, called directly (every call passes through the side-car; the
//     agent is registered with a group of its own, which nobody calls);
//   - per-session, on-demand: the group's corbaloc reference; the group's
//     one replica is a server behind its agent, which registered and
//     reports its load (forwarded once, then client→agent→server);
//   - per-request: a per-request group's corbaloc reference whose static
//     member is a plain server (every call through the front door's GIOP
//     proxy).
//
// HAProxy and NGINX rows are skipped, as in every GIOP run.
func (o *Overhead) setUpOmniORB(ctx context.Context, env *bench.Env) (cfgs []*overheadConfig, err error) {
	progs, err := env.OmniORB(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, c := range cfgs {
				if c.callers != nil {
					c.callers.Close()
				}
			}
			cfgs = nil
		}
	}()
	servers := map[string]*bench.OmniServer{}
	for _, name := range []string{bench.ConfigDirect, cfgAgent, bench.ConfigPerSession, bench.ConfigPerRequest, bench.ConfigOnDemand} {
		s, err := env.StartOmniServer(ctx, progs, "omniorb-server-"+name)
		if err != nil {
			return nil, err
		}
		servers[name] = s
	}
	bal, err := env.StartBalancer(ctx,
		bench.GroupSpec{Name: bench.ConfigPerSession, Binding: "per-session", Strategy: "round-robin", Protocol: bench.ProtocolGIOP},
		bench.GroupSpec{Name: bench.ConfigOnDemand, Binding: "on-demand", Strategy: "least-loaded", Protocol: bench.ProtocolGIOP},
		bench.GroupSpec{Name: bench.ConfigPerRequest, Binding: "per-request", Strategy: "round-robin", Protocol: bench.ProtocolGIOP, Replicas: []string{servers[bench.ConfigPerRequest].IOR}},
		// The agent must join a group; nobody calls through this one.
		bench.GroupSpec{Name: cfgAgent, Binding: "on-demand", Strategy: "least-loaded", Protocol: bench.ProtocolGIOP},
	)
	if err != nil {
		return nil, err
	}
	agents := map[string]*bench.OmniAgent{}
	for _, name := range []string{cfgAgent, bench.ConfigPerSession, bench.ConfigOnDemand} {
		a, err := env.StartOmniAgent(ctx, "agent-"+name, servers[name].IOR, &bench.Join{Admin: bal.Admin, Group: name})
		if err != nil {
			return nil, err
		}
		agents[name] = a
		if err := bal.WaitReady(ctx, name, 1, true); err != nil {
			return nil, err
		}
	}
	if err := bal.WaitReady(ctx, bench.ConfigPerRequest, 1, false); err != nil {
		return nil, err
	}
	refs := map[string]string{
		bench.ConfigDirect:     servers[bench.ConfigDirect].IOR,
		cfgAgent:               agents[cfgAgent].Ref,
		bench.ConfigPerSession: bal.Reference(bench.ConfigPerSession),
		bench.ConfigPerRequest: bal.Reference(bench.ConfigPerRequest),
		bench.ConfigOnDemand:   bal.Reference(bench.ConfigOnDemand),
	}
	for _, name := range []string{bench.ConfigDirect, cfgAgent, bench.ConfigPerSession, bench.ConfigPerRequest, bench.ConfigOnDemand} {
		cl, err := env.StartOmniLoop(progs, "omniorb-client-"+name, refs[name], bench.PrimeN)
		if err != nil {
			return nil, err
		}
		c := &overheadConfig{name: name, callers: cl, replicaCPU: bench.NewCPUMeter(servers[name].Proc)}
		switch name {
		case cfgAgent, bench.ConfigPerSession, bench.ConfigOnDemand:
			c.proxyCPU = bench.NewCPUMeter(agents[name].Proc)
		case bench.ConfigPerRequest:
			c.proxyCPU = bench.NewCPUMeter(bal.Proc)
		}
		cfgs = append(cfgs, c)
	}
	cfgs = append(cfgs, &overheadConfig{name: bench.ConfigHAProxy, skipped: bench.HTTPOnly}, &overheadConfig{name: bench.ConfigNGINX, skipped: bench.HTTPOnly})
	if err := warmOverhead(ctx, cfgs); err != nil {
		return nil, err
	}
	return cfgs, nil
}

// overheadOmniORBIntro is the report's first paragraph for an omniORB run.
func overheadOmniORBIntro(calls, rounds int) string {
	return fmt.Sprintf("Othman, O'Ryan and Schmidt, \"The Design and Performance of an Adaptive CORBA Load Balancing Service\" (2001), §4.2 (Fig. 13/14), with omniORB C++ on both sides: one unmodified omniORB C++ client process per configuration "+
		"(closed loop, one call at a time), omniORB C++ Prime servers (`is_prime(%d)`), "+
		"%d calls through each configuration, in %d interleaved rounds (each configuration in turn, every round). "+
		"Ratios are the medians of the per-round ratios to `direct` in the same round, which cancels the machine's drift. "+
		"Latencies in µs, measured by the client around each call (whole microseconds).", bench.PrimeN, calls, rounds)
}

// overheadOmniORBSetUp is the report's set-up paragraph for an omniORB
// run.
const overheadOmniORBSetUp = "Every configuration has an omniORB C++ Prime server of its own (`prime_server`, built from `internal/bench/omniorb/src`) and an omniORB C++ client process of its own " +
	"(`prime_client --interactive --latencies`: each round's calls are a batch, whose summary carries every call's latency). " +
	"`direct` calls the server's IOR; `agent` calls the reference of a `fulcrum agent giop` in front of its server directly (the agent registers with a group of its own and reports load, but no call goes through the front door): the side-car's own cost. " +
	"`per-session` and `on-demand` call the group's `corbaloc:iiop:` reference; the group's replica is a server behind its agent, which registered the server's IOR rewritten to point at itself " +
	"and reports the server's call rate every 500 ms, so after the one LOCATION_FORWARD every call goes client → agent → server, as in a deployment of unmodified ORB servers. " +
	"`per-request` is a per-request GIOP group whose static member is a plain server: every call through the front door's proxy. " +
	"The proxy CPU column is the agent's for `agent`, `per-session` and `on-demand`, the balancer's for `per-request`. " +
	"HAProxy and NGINX rows are skipped: they balance HTTP, not GIOP. " +
	"Each client keeps its connections for the whole run; 100 unmeasured calls warm each up. The rounds' orders follow a Williams design (each configuration in each position, and right after each other one, equally often). Every process's log is in `logs/`."

// judgeOmniORB records what an omniORB run adds to the targets: the
// side-car's own overhead against direct, and on-demand against the agent
// (what the balancer adds beyond the side-car every call passes through).
func judgeOmniORB(rep *bench.Report, cfgs []*overheadConfig, rows map[string]OverheadRow) {
	ag, od := rows[cfgAgent], rows[bench.ConfigOnDemand]
	if ag.ThroughputRatio == nil {
		return
	}
	rep.Heading("The side-car agent's own overhead")
	rep.Para("`agent` is client → `fulcrum agent giop` → server, the front door not involved: throughput %.3f × direct, mean latency %.3f × direct (%.1f µs against %.1f µs), "+
		"the agent using %s µs of CPU per call. On-demand through a group of agent-fronted servers pays this hop on every call, and the front door only once per client.",
		*ag.ThroughputRatio, *ag.LatencyRatio, ag.Mean, rows[bench.ConfigDirect].Mean, ptrNum(ag.ProxyCPUUS))
	var odc, agc *overheadConfig
	for _, c := range cfgs {
		switch c.name {
		case bench.ConfigOnDemand:
			odc = c
		case cfgAgent:
			agc = c
		}
	}
	if od.ThroughputRatio == nil || odc == nil || agc == nil {
		return
	}
	if thr, _ := roundRatios(odc, agc); len(thr) > 0 {
		med := stats.Median(thr)
		rep.Target("on-demand throughput ≥ 0.97 × agent (what fulcrum adds beyond the side-car)", med >= 0.97,
			"median per-round ratio %.3f (%.0f vs %.0f calls/s overall)", med, od.ThroughputRPS, ag.ThroughputRPS)
	}
}
