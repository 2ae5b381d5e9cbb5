// Package effectiveness is the TAO paper's effectiveness experiment (§4.3,
// Fig. 15/16): N replicas, open-loop clients at fixed rates, and per
// strategy and binding the per-replica load over time, the time to
// equilibrium, the steady CV beside the best CV any assignment of whole
// clients can reach, and the rebinds; over HTTP or GIOP (Go's ORB or
// omniORB). It registers itself with the bench in its init function;
// import it for that effect:
//
//	import _ "github.com/fulcrum-lb/fulcrum/internal/bench/effectiveness"
//
// and run it with bench.Run, or "fulcrum bench effectiveness".
package effectiveness
