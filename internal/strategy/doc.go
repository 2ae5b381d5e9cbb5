// Package strategy holds fulcrum's pluggable balancing policies and the
// catalogue that finds them by name.
//
// A Strategy is built from validated parameters (New); it builds a Picker
// over each immutable snapshot of the group's eligible replicas. Pick is the
// hot path: it never blocks, never takes a group-wide lock and allocates
// nothing. Report-driven strategies also implement Adaptive: the analyzer
// calls Analyze once per step with the group's effective loads, and the
// strategy answers with advisories and, where it can, a plan of which client
// to move from which replica to which.
//
// Strategies that measure the replicas themselves implement Prober
// (probe.go): they say what to probe (TCP connects, HTTP fetches, load
// probes), how often and with which timeouts, choose the targets of each
// round and take the results; the balancer does the I/O. Report-driven
// strategies read the reports' standard metrics from Replica.Metrics.
//
// Each strategy lives in a file of its own and registers itself in init:
//
//	func init() {
//		strategy.Register(strategy.Definition{Name: Name, Build: build, Defaults: defaults})
//	}
//
// Strategies import no net and no os and never call time.Now: the clock and
// randomness come in through Env so that tests are deterministic.
package strategy
