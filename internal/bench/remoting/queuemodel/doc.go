// Package queuemodel simulates the queueing model behind the remoting
// bench (the .NET Remoting paper §V): n equal processor-sharing servers fed by one
// Poisson stream of calls with exponentially distributed sizes, each call
// sent to a server by a dispatch policy when it arrives. It answers what
// a dispatcher can reach in that model, so that a measured reduction
// against random has a reference beside the paper's figure. The held
// policies model a front door with a queue: each server takes at most
// Config.Slots calls (max_inflight) and the dispatcher holds the rest,
// in arrival order or smallest first (queue order cost). Config.Quota
// replaces the constant-speed servers by servers held to a share of a
// core by a CFS bandwidth quota, as the testbed's replicas are: a whole
// core's speed until the period's budget is spent, then nothing until the
// next period; Quota.Machine makes them share fewer cores than there are
// servers, as the testbed's replicas share the machine's. Config.Parallel limits the calls a server works on at
// once (k of the .NET Remoting paper's §IV.B; 1 is first come, first served), the rest
// waiting at the server. Config.Handoff is the time a call takes to reach
// its server, during which a server whose slot freed sits idle;
// Config.Lead frees a held policy's slot that much work before its call
// ends, so that the next call arrives as it does.
//
// The simulation is pure and deterministic: the same Config gives the
// same figure on every machine. Every policy sees the same arrivals and
// sizes (common random numbers), so their differences are not sampling
// noise of the workload.
//
//	red, err := queuemodel.Reduction(queuemodel.Config{Servers: 4, Utilization: 0.9}, queuemodel.ShortestQueue)
//	// red ≈ 0.67: join-the-shortest-queue's mean response time is 67% below random's
package queuemodel
