// Package remoting is the .NET Remoting paper's scheduling experiment (§V, Fig. 13/14):
// getPrimeCount(X) with X and the gaps exponential, open-loop clients,
// 2/4/8 replicas of equal CPU on the testbed behind a per-request group,
// offered loads of 50/70/90% of the group's capacity, and each strategy's
// mean and p99 response time beside random's; it needs root. Subpackage
// queuemodel simulates the queueing model the report sets the
// measurements beside. The experiment registers itself with the bench in
// its init function; import it for that effect:
//
//	import _ "github.com/fulcrum-lb/fulcrum/internal/bench/remoting"
//
// and run it with bench.Run, or "fulcrum bench remoting".
package remoting
