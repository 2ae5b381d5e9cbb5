package bench

import (
	"context"
	"fmt"
)

// setUpGIOP is setUp over GIOP: the Go Prime servant as the replica (a
// plain one for direct and per-request, one with its monitor built in and
// registered for per-session and on-demand, as seed 000's Latency server
// with the load monitor added), GIOP groups, and callers that are fulcrum's
// client ORB calling is_prime(overheadPrimeN): direct through the replica's
// IOR, the others through the group's corbaloc reference, following
// LOCATION_FORWARD. HAProxy and NGINX do not speak GIOP: their rows are
// skipped.
func (o *Overhead) setUpGIOP(ctx context.Context, env *Env) ([]*overheadConfig, error) {
	plain := map[string]*Replica{}
	for _, name := range []string{ConfigDirect, ConfigPerRequest} {
		r, err := env.StartReplica(ctx, "replica-"+name, nil)
		if err != nil {
			return nil, err
		}
		plain[name] = r
	}
	bal, joined, err := startOverheadGroups(ctx, env, ProtocolGIOP, plain[ConfigPerRequest].URL)
	if err != nil {
		return nil, err
	}
	call := func(ref string) Endpoint { return Endpoint{GIOP: &GIOPCall{Ref: ref, N: overheadPrimeN}} }
	cfgs := []*overheadConfig{
		{name: ConfigDirect, callers: NewCallers(call(plain[ConfigDirect].URL), 1), replicaCPU: newCPUMeter(plain[ConfigDirect].Proc)},
		{name: ConfigPerSession, callers: NewCallers(call(bal.Reference(ConfigPerSession)), 1), replicaCPU: newCPUMeter(joined[ConfigPerSession].Proc)},
		{name: ConfigPerRequest, callers: NewCallers(call(bal.Reference(ConfigPerRequest)), 1),
			replicaCPU: newCPUMeter(plain[ConfigPerRequest].Proc), proxyCPU: newCPUMeter(bal.Proc)},
		{name: ConfigOnDemand, callers: NewCallers(call(bal.Reference(ConfigOnDemand)), 1), replicaCPU: newCPUMeter(joined[ConfigOnDemand].Proc)},
		{name: ConfigHAProxy, skipped: httpOnly},
		{name: ConfigNGINX, skipped: httpOnly},
	}
	if err := warmOverhead(ctx, cfgs); err != nil {
		return nil, err
	}
	return cfgs, nil
}

// overheadGIOPIntro is the report's first paragraph for a GIOP run.
func overheadGIOPIntro(calls, rounds int) string {
	return fmt.Sprintf("Seed 000 §4.2 (Fig. 13/14) over CORBA GIOP 1.2: one single-threaded closed-loop client (fulcrum's client ORB), one Prime servant (`is_prime(%d)`), "+
		"%d calls through each configuration, in %d interleaved rounds (each configuration in turn, every round). "+
		"Ratios are the medians of the per-round ratios to `direct` in the same round, which cancels the machine's drift. "+
		"Latencies in µs, measured by the client from sending the request to decoding the reply.", overheadPrimeN, calls, rounds)
}

// overheadGIOPSetUp is the report's set-up paragraph for a GIOP run.
const overheadGIOPSetUp = "Every configuration has a Prime servant process of its own (`fulcrum backend prime --giop`, fulcrum's GIOP codec), so that all replicas are equally busy. " +
	"`direct` calls a plain servant through its IOR; `per-request` is a fulcrum per-request GIOP group whose static member is a plain servant, so the two differ only by the proxy hop. " +
	"`per-session` and `on-demand` call servants with the monitor built in (no side-car hop), registered with their IORs and reporting their load every 500 ms; " +
	"the client calls the group's `corbaloc:iiop:` reference, is answered LOCATION_FORWARD once by the front door, and then calls the servant directly, as any CORBA ORB does. " +
	"HAProxy and NGINX rows are skipped: they balance HTTP, not GIOP. " +
	"Each configuration keeps one connection for the whole run; 100 unmeasured calls warm each up. " +
	"The rounds' orders follow a Williams design: over every 2n rounds each configuration runs in each position, and right after each other one, equally often. Generated configs and every process's log are in `logs/`."
