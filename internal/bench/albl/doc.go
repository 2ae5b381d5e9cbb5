// Package albl is the ALBL paper's experiment (§5, Fig. 3–10): throughput,
// response time and errors of nine strategies over two NGINX replicas on
// the testbed (network namespaces, CPU quotas, a shaped link), each with
// "fulcrum agent http" beside it; it needs root. It registers itself with
// the bench in its init function; import it for that effect:
//
//	import _ "github.com/fulcrum-lb/fulcrum/internal/bench/albl"
//
// and run it with bench.Run, or "fulcrum bench albl".
package albl
