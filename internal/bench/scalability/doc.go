// Package scalability is Beekhuis's experiments A and L: request bodies
// of 24 B–240 KB echoed through direct, per-request, on-demand, HAProxy
// and NGINX, and a grid of X client processes × Y callers each with the
// regression T = β0 + β1·X + β2·Y + β3·X·Y and Little's law. It registers
// itself with the bench in its init function; import it for that effect:
//
//	import _ "github.com/fulcrum-lb/fulcrum/internal/bench/scalability"
//
// and run it with bench.Run, or "fulcrum bench scalability".
package scalability
