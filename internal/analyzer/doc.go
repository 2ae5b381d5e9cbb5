// Package analyzer is the per-group load analyzer (the TAO paper §3.1): it takes
// load reports in, keeps every replica's dampened effective load, runs the
// group's strategy once per report interval and keeps the advisory each
// replica's monitor gets, with the plan of moves behind it.
//
// It is a pure, synchronous core in the shape of etcd's RawNode: events go
// in (SetReplicas, Report, Bound, Step with the current time), decisions
// come out (advisories, Step's views and planned moves). It does no I/O,
// never reads the clock and is not safe for concurrent use. Package
// groupcore wraps it with a group's replica states and binding mode; the
// balancer holds its group lock around that and calls Step from a ticker.
//
//	a := analyzer.New(s, 500*time.Millisecond)
//	a.SetReplicas([]analyzer.ReplicaInfo{{ID: "a", Weight: 1, State: analyzer.StateActive}, ...})
//	adv, err := a.Report("a", report, now) // answer the monitor with adv
//	...
//	st := a.Step(now) // every interval: publish st.Replicas' loads and st.Moves
//	if to, ok := a.Target(client); ok { ... bind the returning client to it ... }
//	a.Bound(client, to)
//
// Freshness: a replica whose last report is older than StaleIntervals
// report intervals is unreported: its load is unknown, not zero, and its
// next report restarts the dampening.
//
// Rebalancing: an adaptive strategy's plan names clients to move; the
// source replicas get `high` advisories naming them, Target tells the
// front door where each goes when it comes back, Bound completes the move
// and shifts its rate between the two replicas' effective loads at once
// (so neither picks nor the dashboard wait for dampening to catch up). A
// move the client does not complete within MoveExpiryIntervals expires.
//
// Hazards (the TAO paper §3.3.4, §4.3), and what keeps the loads from
// oscillating:
//
//   - While moves are pending, and until every replica a move touched has
//     sent SettleReports reports since, the strategy is not asked for a new
//     plan: the first report after a move covers an interval in which the
//     client called both replicas. That report does not move the effective
//     load either; the next one sets it.
//   - The strategy plans on dampened loads and client rates: a client's
//     rate is dampened like the load, from its second report on a replica
//     (its first may cover part of an interval).
//   - A client that was moved is pinned for MovePinIntervals, doubled on
//     each further move, so two clients of nearly equal rate are not
//     swapped back and forth on measurement noise.
//   - A tentative plan (strategy.Decision.Tentative: a refinement whose
//     gain is within the rates' noise, which may name pinned clients) is
//     carried out only once analyses with one outnumber those without by
//     ConfirmAnalyses since the last plan.
//   - A front door that cannot tell returning clients apart (GIOP;
//     SetUnidentifiedClients) binds a client sent back where the picker
//     says, the least loaded replica: a plan's moves out of a replica below
//     the mean that the plan also moves clients into (a swap) wait for a
//     later plan, or the client sent back would be picked straight back
//     onto it while the one meant for it lands elsewhere.
//   - After a `high` advisory without named clients (the strategy had no
//     client rates to plan with) the strategy is not asked again for
//     ShedHoldIntervals.
package analyzer
