// Package health decides whether a group's replicas may take calls.
//
// Two pure state machines hold the decisions; they do no I/O, never read the
// clock (time comes in as an argument) and are not safe for concurrent use
// (the caller serialises them, e.g. under its group lock):
//
//   - Active: the active-probe state of one replica. Rise probes in a row
//     that succeed bring a down replica up; Fall in a row that fail take an
//     up replica down (HAProxy's rise/fall).
//   - Passive: outlier ejection for a group. ConsecutiveFailures failed
//     calls in a row (connection errors or 5xx) eject a replica for
//     BaseEjection × the number of ejections in a row; a replica that then
//     stays in for as long as its last ejection lasted is forgiven; at most
//     MaxEjectedPercent of the group is ejected at once (Envoy's outlier
//     detection, simplified).
//
// The Prober is the I/O edge of Active: it GETs each target's health path
// every interval and reports changes through a callback:
//
//	p := health.NewProber(spec.Health, func(id, state string) {
//		// state is health.Up or health.Down: apply it to the replica.
//	}, health.ProberOptions{})
//	p.SetTargets([]health.Target{{ID: "r1", URL: "http://10.0.0.5:9001"}})
//	go p.Run(ctx)
//
// Passive is driven by the balancer itself: feed every finished call to
// Observe, apply the returned Change, and call Tick at (or after) the time
// NextReturn reports to bring ejected replicas back.
package health

// States reported by Active, Passive and the Prober.
const (
	// Up: the replica may take calls as far as health is concerned.
	Up = "up"
	// Down: active probes fail.
	Down = "down"
	// Ejected: passive ejection after failed calls.
	Ejected = "ejected"
)

// Change is a state change of one replica.
type Change struct {
	ID    string
	State string
}
