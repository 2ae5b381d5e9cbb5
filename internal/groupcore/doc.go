// Package groupcore is one group's decisions, the pure core the balancer
// wraps: every replica's lifecycle and state, the analyzer (loads,
// advisories, planned moves), what the group's binding mode lets monitors
// and front doors see of them, the per-balance reset and the end of
// removals.
//
// Like the analyzer it is synchronous and shaped like etcd's RawNode:
// events go in (Add, Forget, Apply with a lifecycle Event, Report, Bound,
// Step with the current time), decisions come out (states, advisories,
// Step's views, planned moves, resets and removals). It does no I/O, never
// reads the clock and is not safe for concurrent use; the balancer holds
// its group lock around it, calls Step from a ticker, publishes what Step
// returns and writes the changes to the store after releasing the lock.
//
//	c := groupcore.New(s, groupcore.Settings{Binding: groupcore.OnDemand, Interval: time.Second})
//	c.Add("a", 1, groupcore.Lifecycle{})
//	adv, err := c.Report("a", report, now) // answer the monitor with adv
//	c.Apply("a", groupcore.HealthDown, now) // the health checks failed
//	st := c.Step(now, inflight) // every interval
//	// clear st.Reset's per-balance loads, drop st.Removed, publish st
//
// Replica state: a replica's Lifecycle keeps three independent verdicts —
// the active health checks' (HealthDown, HealthUp), passive ejection's
// (Ejected, Readmitted) and the operator's (Drain, Activate, Remove) — and
// derives the one state from them: down before ejected before draining,
// else active. Only active replicas take new bindings; the others get the
// `drain` advisory.
//
// Per-balance reset: a picker adds a per-balance load to the replica it
// picks, and counts the binding (strategy.Live's Extra and Bindings), so
// that a burst of new bindings between reports does not all land on one
// replica. Both stand until the replica's load accounts for those
// bindings: not when its report arrives (the snapshot the pickers read
// still holds the previous load until the next step publishes) but at the
// first Step after a report, which lists the replica in Step.Reset; the
// caller clears them there, before publishing the step's loads. This is
// the one place the reset is decided.
//
// Binding modes: only on-demand clients are ever moved, so in per-session
// and per-request groups a `high` advisory reaches monitors as nominal and
// Step plans no moves for the front door (drain still sends per-session
// clients away from a replica that is leaving). The one exception is a
// front door that moves clients itself (Settings.MoveClients: tcp groups,
// per-request): Step plans moves for it, and it sends a client address's
// next connection to the replica its move names, while the advisories
// stay nominal (a replica's agent cannot send a connection back).
//
// Removal: Remove drains a replica; the first Step at which it is idle (no
// calls per second nor in flight in its fresh report, none in flight from
// the balancer) or has drained for DrainTimeout removes it
// (Step.Removed).
//
// Behaviour is pinned by the scenario scripts in testdata (package
// scripttest; go test -run TestScenarios -rewrite regenerates them).
package groupcore
