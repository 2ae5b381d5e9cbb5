// Package tcpagent is the measuring half of "fulcrum agent tcp": a
// side-car beside an unmodified TCP replica that reads the replica's load
// from outside and hands it to a monitor made with monitor.NewExternal,
// which registers the replica's HOST:PORT in a tcp group, reports and
// deregisters.
//
// What it reads:
//
//   - The replica's CPU time, exactly as the HTTP agent does (it runs a
//     CPU-only httpagent.Agent): /proc/<pid>/stat of the replica's process
//     and its descendants, or a cgroup's cpuacct.usage (v1) or cpu.stat
//     (v2), every Config.Sample. cpu and utilization are the share of the
//     replica's cores used over the report window.
//
//   - Its client connections, at each report: the ESTABLISHED sockets
//     whose local port is the target's, in the tcp and tcp6 tables of the
//     replica's network namespace (/proc/<pid>/net, so a replica in a
//     container of its own is counted in its namespace, not the agent's).
//     They are reported as inflight: least-loaded with load inflight, or
//     the monitor's --load connections, balance on them.
//
//     a, err := tcpagent.New(tcpagent.Config{
//     Target: "10.0.0.5:7000",
//     Net:    tcpagent.PidNet("", pid),
//     CPU:    httpagent.ProcCPU{Pids: []int{pid}},
//     })
//     mon, err := monitor.NewExternal(opts, a.Metrics)
//     go a.Run(ctx)
package tcpagent
