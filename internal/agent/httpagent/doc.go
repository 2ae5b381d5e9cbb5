// Package httpagent is the measuring half of "fulcrum agent http": a
// side-car beside an unmodified HTTP replica (NGINX serving static objects,
// as in the ALBL paper's web cluster) that reads the replica's load from outside
// and hands it to a monitor made with monitor.NewExternal, which registers
// the replica, reports (push or pull) and deregisters.
//
// What it reads, every Config.Sample (100 ms):
//
//   - NGINX's stub_status page: the request counter gives rps (the
//     agent's own stub_status requests left out), Reading + Writing the
//     requests in progress (inflight). latency_ms is an estimate, since
//     NGINX's status page has no timings: the larger of Little's law
//     (mean requests in progress over the window's readings / rps) and
//     the mean time the agent's own stub_status reads took, which shows
//     a replica slowed by a CPU hog or a backlog even at rates too low
//     for the 100 ms snapshots to catch a request in progress.
//   - The replica's CPU time: /proc/<pid>/stat of given processes and all
//     their live descendants (the master's reaped children included), or
//     a cgroup's cpuacct.usage (v1) or cpu.stat (v2). cpu and utilization
//     are the share of the replica's cores (the cgroup's quota, else the
//     machine's) used over the window: what weighted-round-robin-orca and
//     least-loaded with load "cpu" read.
//
// It also answers the balancer's load probes (strategy prequal) on its own
// listener at protocol.ProbePath: requests in progress from a fresh
// stub_status reading, and the latency estimate over the last second.
// The balancer probes a replica at its registered address, so NGINX must
// pass that one path to the agent (location = /fulcrum/probe {
// proxy_pass http://<agent>; }); docs/agents.md shows the configuration.
// Every probe the agent serves is taken for one NGINX passed on and, like
// the agent's own stub_status reads, left out of the request figures.
package httpagent
