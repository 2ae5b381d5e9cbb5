// Package overhead is the TAO paper's overhead experiment (§4.2, Fig. 13/14):
// one single-threaded closed-loop client and one prime replica, the same
// number of calls through direct, per-session, per-request, on-demand,
// HAProxy and NGINX, in interleaved rounds, with an A/A control. It
// registers itself with the bench in its init function; import it for
// that effect:
//
//	import _ "github.com/fulcrum-lb/fulcrum/internal/bench/overhead"
//
// and run it with bench.Run, or "fulcrum bench overhead".
package overhead
