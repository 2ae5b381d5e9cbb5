// Package cluster is "fulcrum bench cluster": three fulcrum instances on a
// three-member etcd cluster the experiment starts on loopback (Debian's
// etcd-server), their admin APIs on 127.0.0.1, 127.0.0.2 and 127.0.0.3.
// It measures
//
//   - propagation: from the 201 of a registration at one instance to the
//     replica active in another's GET (propagation.go);
//   - overhead: per-request calls through three instances (callers spread
//     over them) against one, with an A/A control: one instance again, on
//     another process (overhead.go);
//   - effectiveness: the effectiveness experiment's run (package
//     effectiveness, HTTPRun) with least-loaded/on-demand, every client at
//     the group leader's front door against the clients spread over the
//     three instances' (Options.FrontDoors): equilibrium, steady CV, and
//     where the rebinds happened and whether the non-leaders' reached the
//     leader (equilibrium.go, bindings.go);
//   - fan-in: simulated replicas reporting to the three instances with
//     loads drifting as a random walk: report latency, the instances' CPU
//     time per report and etcd's writes per second at two report rates
//     (fanin.go);
//   - instance failover: an instance killed with kill -9 under per-request
//     clients given every front door, and bound on-demand clients
//     (failover.go);
//   - leader failover, on the two instances left: kill -9 of a group's
//     analyzer leader → a monitor's first advisory with a higher term;
//     not measured (and said so) when fulcrum serve runs no leader
//     (leader.go).
//
// It registers itself with the bench in its init function:
//
//	import _ "github.com/fulcrum-lb/fulcrum/internal/bench/cluster"
package cluster
