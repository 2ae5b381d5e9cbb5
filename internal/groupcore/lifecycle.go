package groupcore

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
)

// Event is something the balancer learns about one replica.
type Event int

// The events a replica's lifecycle takes.
const (
	// HealthDown and HealthUp are the active health checks' verdicts
	// (HealthUp also when the group stops checking).
	HealthDown Event = iota + 1
	HealthUp
	// Ejected and Readmitted are passive ejection's: calls failed, the
	// ejection time has passed.
	Ejected
	Readmitted
	// Drain stops new bindings (the operator's drain).
	Drain
	// Activate undoes Drain and Remove (the operator's activate, or the
	// replica registering again).
	Activate
	// Remove drains the replica and removes it once idle (DELETE).
	Remove
)

// String names the event for logs and test failures.
func (e Event) String() string {
	switch e {
	case HealthDown:
		return "health-down"
	case HealthUp:
		return "health-up"
	case Ejected:
		return "ejected"
	case Readmitted:
		return "readmitted"
	case Drain:
		return "drain"
	case Activate:
		return "activate"
	case Remove:
		return "remove"
	}
	return "unknown"
}

// admin is what the operator said of a replica.
type admin uint8

const (
	serving admin = iota
	draining
	removing
)

// Lifecycle is one replica's lifecycle: three independent verdicts (the
// health checks', passive ejection's and the operator's) and the one state
// that follows from them (State). The zero value is a registered replica
// that is active. Lifecycles are values: Apply returns the next one.
type Lifecycle struct {
	down    bool // active health checks failed
	ejected bool // passive ejection
	admin   admin
	// since is when Remove was applied (the drain timeout runs from it).
	since time.Time
}

// Restored is the lifecycle of a replica loaded from the store with its
// persisted administrative flags, at now (a removal's drain timeout runs
// from now).
func Restored(drainingFlag, removingFlag bool, now time.Time) Lifecycle {
	switch {
	case removingFlag:
		return Lifecycle{admin: removing, since: now}
	case drainingFlag:
		return Lifecycle{admin: draining}
	}
	return Lifecycle{}
}

// Apply returns the lifecycle after ev, at now, and whether its state (as
// State tells it, or the administrative flags the store keeps) changed.
// Remove of a replica already being removed keeps its start.
func (l Lifecycle) Apply(ev Event, now time.Time) (Lifecycle, bool) {
	next := l
	switch ev {
	case HealthDown:
		next.down = true
	case HealthUp:
		next.down = false
	case Ejected:
		next.ejected = true
	case Readmitted:
		next.ejected = false
	case Drain:
		if next.admin == serving {
			next.admin = draining
		}
	case Activate:
		next.admin, next.since = serving, time.Time{}
	case Remove:
		if next.admin != removing {
			next.admin, next.since = removing, now
		}
	}
	return next, next != l
}

// State is the replica's state: down (health checks) before ejected
// (passive) before draining (the operator's drain or removal), else
// active. Only active replicas take new bindings.
func (l Lifecycle) State() string {
	switch {
	case l.down:
		return analyzer.StateDown
	case l.ejected:
		return analyzer.StateEjected
	case l.admin != serving:
		return analyzer.StateDraining
	}
	return analyzer.StateActive
}

// Draining and Removing are the administrative flags the store keeps
// (protocol.Replica's): Draining is set for a drained or removed
// replica, Removing for a removed one.
func (l Lifecycle) Draining() bool { return l.admin != serving }

// Removing reports whether the replica is being removed (see Draining).
func (l Lifecycle) Removing() bool { return l.admin == removing }

// WithAdminOf is l with o's administrative verdict (drain, removal and
// its start), its health and ejection verdicts kept: the undo of an
// operator's change that could not be stored, whatever health checks and
// ejection decided meanwhile.
func (l Lifecycle) WithAdminOf(o Lifecycle) Lifecycle {
	l.admin, l.since = o.admin, o.since
	return l
}
