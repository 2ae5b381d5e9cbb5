package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// LeaderFailover is the leader-failover phase's result: from kill -9 of
// a group's analyzer leader to the first advisory carrying a higher term,
// as a monitor of that group (given every live instance's admin URL) sees
// it.
type LeaderFailover struct {
	// Measured is false when this fulcrum runs no analyzer leader (GET
	// /v1/cluster names none, or advisories carry no term).
	Measured bool `json:"measured"`
	// Reason says why it was not measured.
	Reason string `json:"reason,omitempty"`
	// Killed is the leader instance killed.
	Killed string `json:"killed,omitempty"`
	// OldTerm and NewTerm are the advisories' terms before and after.
	OldTerm uint64 `json:"old_term,omitempty"`
	NewTerm uint64 `json:"new_term,omitempty"`
	// NewTermAdvisoryMS is from the kill to the first advisory with a
	// higher term; when none came within the phase's bound (4 ×
	// session_ttl), the bound, and NewTerm is 0.
	NewTermAdvisoryMS float64 `json:"new_term_advisory_ms,omitempty"`
}

// notMeasuredLeader is why the leader failover is not measured on a
// fulcrum without the analyzer leader.
const notMeasuredLeader = "not measured yet: this fulcrum serve runs no analyzer leader (GET /v1/cluster names none, or advisories carry no term)"

// leaderGroup is the on-demand group of the leader phase.
const leaderGroup = "leader"

// measureLeaderFailover creates an on-demand group on the live instances,
// runs a monitor reporting to them, and — when GET /v1/cluster names the
// group's leader and advisories carry its term — kills that leader with
// kill -9 and times the monitor's first advisory with a higher term.
// Without a leader it measures nothing and says so (after 2 ×
// session_ttl).
func measureLeaderFailover(ctx context.Context, env *bench.Env, live []*instance) (LeaderFailover, error) {
	out := LeaderFailover{Reason: notMeasuredLeader}
	if _, err := createGroup(ctx, live[0], live, leaderGroup, map[string]any{"binding": "on-demand", "report_interval": "200ms"}); err != nil {
		return out, err
	}
	var admins []string
	for _, in := range live {
		admins = append(admins, in.admin)
	}
	mon, err := monitor.New(monitor.Options{
		Admin: admins[0], Admins: admins[1:], Group: leaderGroup, Address: "http://127.0.4.1:9",
		JoinToken: adminToken, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return out, err
	}
	if err := mon.Start(); err != nil {
		return out, err
	}
	defer func() {
		closing, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mon.Close(closing)
	}()

	leader, ok := waitLeader(ctx, live[0], leaderGroup, 2*sessionTTL)
	if !ok {
		return out, ctx.Err()
	}
	// The term of the advisory a report is answered with (a nominal
	// advisory is not kept by the monitor, its term only in the answer).
	term := func() uint64 {
		adv, err := mon.ReportNow(ctx)
		if err != nil {
			return 0
		}
		return adv.Term
	}
	oldTerm := uint64(0)
	if !waitFor(ctx, 2*sessionTTL, func() bool { oldTerm = term(); return oldTerm > 0 }) {
		return out, ctx.Err()
	}
	var victim *instance
	for _, in := range live {
		if in.name == leader {
			victim = in
		}
	}
	if victim == nil {
		return out, fmt.Errorf("cluster: leader failover: the leader of %s is %q, not a live instance", leaderGroup, leader)
	}
	out = LeaderFailover{Measured: true, Killed: leader, OldTerm: oldTerm}
	killed := time.Now()
	victim.proc.Stop(0) // SIGKILL
	env.Logf("leader failover: killed %s, leader of %s at term %d, with kill -9", leader, leaderGroup, out.OldTerm)
	bound := 4 * sessionTTL
	var newTerm uint64
	if waitFor(ctx, bound, func() bool { newTerm = term(); return newTerm > out.OldTerm }) {
		out.NewTerm = newTerm
		out.NewTermAdvisoryMS = float64(time.Since(killed)) / float64(time.Millisecond)
		return out, nil
	}
	out.NewTermAdvisoryMS = float64(bound.Milliseconds())
	return out, ctx.Err()
}

// waitLeader waits up to within for in's GET /v1/cluster to name a
// leader of group, and returns it.
func waitLeader(ctx context.Context, in *instance, group string, within time.Duration) (string, bool) {
	var leader string
	ok := waitFor(ctx, within, func() bool {
		var view protocol.Cluster
		if in.do(ctx, http.MethodGet, "/v1/cluster", nil, &view) != nil {
			return false
		}
		leader = view.Leaders[group]
		return leader != ""
	})
	return leader, ok
}

// waitFor checks cond every 5 ms until it holds (true), within passes or
// ctx ends (false).
func waitFor(ctx context.Context, within time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for !cond() {
		if !pause(ctx, 5*time.Millisecond) {
			return false
		}
	}
	return true
}
