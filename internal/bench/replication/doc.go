// Package replication is "fulcrum bench replication": seed 001's (MEAD's)
// measurements of active replication, run on fulcrum's replicated groups
// (docs/replication.md).
//
// One balancer serves a replicated group (the bridge, its log on the
// single-node bbolt engine, "fulcrum agent replicated" in front of each
// "fulcrum backend counter") and a per-request group in front of one
// plain counter. Closed-loop clients call POST /increment:
//
//   - the round-trip time (RTT) for 1–5 clients × 2–4 replicas, plain
//     clients (the connection is the session) and protocol-aware ones
//     (Fulcrum-Session and Fulcrum-Sequence), the first calls of each
//     client discarded, split by the bridge's Server-Timing into
//     client→bridge, ordering (the log's append) and bridge→replicas (the
//     wait for the first reply) — seed 001 Fig. 3–5;
//   - beside them in the same run, the same calls straight to one plain
//     counter and through the per-request group;
//   - seed 001's two other topologies with 2 replicas (callers.go): clients
//     → an unreplicated relay → the bridge → the counters (MEAD's set-up),
//     and clients → the bridge of a second group of relays, each behind
//     its agent and calling through it, → one plain deduplicating counter
//     (replicated callers);
//   - the ordered requests per second of 8 concurrent protocol-aware
//     clients;
//   - with a failpoint binary (--failpoint-binary), fault injection at
//     seed 001's points with 2 replicas: the fault at the middle call,
//     several runs per point, the RTT increase of the faulted call (Fig. 6).
//
// With --testbed (testbed.go; root) each replica's counter and agent run
// together in a testbed replica of 0.25 cores, as does the plain counter,
// behind the testbed balancer: the RTT growth from 2 to 4 replicas is
// judged there. The relay topologies and fault injection run on loopback
// only.
//
// Every run checks that every call was answered once, that each live
// replica's counter equals the number of distinct requests, that the
// live replicas' states are equal, and that the deduplicating callee
// applied each of the relays' outgoing calls exactly once (its value is
// the number of calls to the relays, whose states are equal); a broken
// invariant fails the run.
package replication
