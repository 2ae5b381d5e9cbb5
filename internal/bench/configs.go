package bench

// The configurations the experiments compare, by their names in results
// and reports (overhead runs them in this order in every round).
const (
	// ConfigDirect calls a plain replica, no balancer between.
	ConfigDirect = "direct"
	// ConfigPerSession goes through a per-session group: bound once, then
	// direct.
	ConfigPerSession = "per-session"
	// ConfigPerRequest goes through a per-request group's front door.
	ConfigPerRequest = "per-request"
	// ConfigOnDemand goes through an on-demand group: bound once, moved when
	// the replica sheds load.
	ConfigOnDemand = "on-demand"
	// ConfigHAProxy goes through HAProxy.
	ConfigHAProxy = "haproxy"
	// ConfigNGINX goes through NGINX.
	ConfigNGINX = "nginx"
)

// PrimeN is the n of GET /prime/{n} (is_prime(n) over GIOP) that the
// overhead experiment and scalability's load grid call: small, so that the
// path of the call, not the trial division, is what is measured.
const PrimeN = 1009
