package cluster

import (
	"context"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// LeaderFailover is the leader-failover phase's result: from kill -9 of
// a group's analyzer leader to the first advisory carrying the new term,
// as a monitor of that group sees it.
type LeaderFailover struct {
	// Measured is false until fulcrum serve runs the analyzer leader.
	Measured bool `json:"measured"`
	// Reason says why it was not measured.
	Reason string `json:"reason,omitempty"`
	// NewTermAdvisoryMS is from the kill to the first advisory with a
	// higher term.
	NewTermAdvisoryMS float64 `json:"new_term_advisory_ms,omitempty"`
}

// notMeasuredLeader is why measureLeaderFailover measures nothing yet.
const notMeasuredLeader = "not measured yet: fulcrum serve does not run the analyzer leader (internal/leader) yet, so advisories carry no term to fail over"

// measureLeaderFailover is the hook for the leader failover: once serve
// elects a leader per group (GET /v1/cluster's leaders) and advisories
// carry its term, it will run a monitor (monitor.Options.Admins: every
// instance) in an on-demand group under load, kill -9 the group's leader
// and time the first advisory whose term is above the killed leader's.
func measureLeaderFailover(_ context.Context, _ *bench.Env, _ []*instance) (LeaderFailover, error) {
	return LeaderFailover{Reason: notMeasuredLeader}, nil
}
