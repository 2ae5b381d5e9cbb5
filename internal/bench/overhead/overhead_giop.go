package overhead

import (
	"context"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// setUpGIOP is setUp over GIOP: the Go Prime servant as the replica (a
// plain one for direct and per-request, one with its monitor built in and
// registered for per-session and on-demand, as the TAO paper's Latency server
// with the load monitor added), GIOP groups, and callers that are fulcrum's
// client ORB calling is_prime(bench.PrimeN): direct through the replica's
// IOR, the others through the group's corbaloc reference, following
// LOCATION_FORWARD. HAProxy and NGINX do not speak GIOP: their rows are
// skipped.
func (o *Overhead) setUpGIOP(ctx context.Context, env *bench.Env) ([]*overheadConfig, error) {
	plain := map[string]*bench.Replica{}
	for _, name := range []string{bench.ConfigDirect, bench.ConfigPerRequest} {
		r, err := env.StartReplica(ctx, "replica-"+name, nil)
		if err != nil {
			return nil, err
		}
		plain[name] = r
	}
	bal, joined, err := startOverheadGroups(ctx, env, bench.ProtocolGIOP, plain[bench.ConfigPerRequest].URL)
	if err != nil {
		return nil, err
	}
	call := func(ref string) bench.Endpoint {
		return bench.Endpoint{GIOP: &bench.GIOPCall{Ref: ref, N: bench.PrimeN}}
	}
	cfgs := []*overheadConfig{
		{name: bench.ConfigDirect, callers: bench.NewCallers(call(plain[bench.ConfigDirect].URL), 1), replicaCPU: bench.NewCPUMeter(plain[bench.ConfigDirect].Proc)},
		{name: bench.ConfigPerSession, callers: bench.NewCallers(call(bal.Reference(bench.ConfigPerSession)), 1), replicaCPU: bench.NewCPUMeter(joined[bench.ConfigPerSession].Proc)},
		{name: bench.ConfigPerRequest, callers: bench.NewCallers(call(bal.Reference(bench.ConfigPerRequest)), 1),
			replicaCPU: bench.NewCPUMeter(plain[bench.ConfigPerRequest].Proc), proxyCPU: bench.NewCPUMeter(bal.Proc)},
		{name: bench.ConfigOnDemand, callers: bench.NewCallers(call(bal.Reference(bench.ConfigOnDemand)), 1), replicaCPU: bench.NewCPUMeter(joined[bench.ConfigOnDemand].Proc)},
		{name: bench.ConfigHAProxy, skipped: bench.HTTPOnly},
		{name: bench.ConfigNGINX, skipped: bench.HTTPOnly},
	}
	if err := warmOverhead(ctx, cfgs); err != nil {
		return nil, err
	}
	return cfgs, nil
}

// overheadGIOPIntro is the report's first paragraph for a GIOP run.
func overheadGIOPIntro(calls, rounds int) string {
	return fmt.Sprintf("Othman, O'Ryan and Schmidt, \"The Design and Performance of an Adaptive CORBA Load Balancing Service\" (2001), §4.2 (Fig. 13/14), over CORBA GIOP 1.2: one single-threaded closed-loop client (fulcrum's client ORB), one Prime servant (`is_prime(%d)`), "+
		"%d calls through each configuration, in %d interleaved rounds (each configuration in turn, every round). "+
		"Ratios are the medians of the per-round ratios to `direct` in the same round, which cancels the machine's drift. "+
		"Latencies in µs, measured by the client from sending the request to decoding the reply.", bench.PrimeN, calls, rounds)
}

// overheadGIOPSetUp is the report's set-up paragraph for a GIOP run.
const overheadGIOPSetUp = "Every configuration has a Prime servant process of its own (`fulcrum backend prime --giop`, fulcrum's GIOP codec), so that all replicas are equally busy. " +
	"`direct` calls a plain servant through its IOR; `per-request` is a fulcrum per-request GIOP group whose static member is a plain servant, so the two differ only by the proxy hop. " +
	"`per-session` and `on-demand` call servants with the monitor built in (no side-car hop), registered with their IORs and reporting their load every 500 ms; " +
	"the client calls the group's `corbaloc:iiop:` reference, is answered LOCATION_FORWARD once by the front door, and then calls the servant directly, as any CORBA ORB does. " +
	"HAProxy and NGINX rows are skipped: they balance HTTP, not GIOP. " +
	"Each configuration keeps one connection for the whole run; 100 unmeasured calls warm each up. " +
	"The rounds' orders follow a Williams design: over every 2n rounds each configuration runs in each position, and right after each other one, equally often. Generated configs and every process's log are in `logs/`."
