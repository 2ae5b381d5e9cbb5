package balancer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
)

// Leadership in a cluster (Options.Leadership; package leader). Each group
// has one analyzer leader among the instances. On this instance:
//
//   - every group is joined with its report interval when it starts
//     (created at start, through the API, or followed from the store),
//     joined again when the interval changes, and left when it stops;
//   - the group's step plans (strategy decisions, `high` advisories with
//     shed and clients, planned moves) only while the instance leads the
//     group and is warm (Leadership.CanPlan); any other step withdraws the
//     `high` advisories it still holds, plans nothing, and serves from the
//     last view (groupcore.StepAs). Removals are finished by the leader
//     alone, once warm or in office for leader.WarmupIntervals report
//     intervals (a group whose replicas never report never warms), so
//     that a removed replica's reports reach it before it judges it idle;
//   - active health checks and pulled reports run only while the instance
//     leads the group (started and stopped by LeadershipChanged, which
//     the Elector's Options.OnChange calls); passive ejection and the
//     strategy's probes run on every instance;
//   - pushed reports are taken only by the leader, whose advisories carry
//     its term; another instance answers with a *NotLeaderError (307 to the
//     leader's /v1/report) or ErrNoLeader (503) (report.go, leaderreport.go);
//   - the leader pushes its view of the loads to the other instances
//     (loadpush.go), which pick from it (loadview.go);
//   - the writes only the leader makes (the end of a removal, the health
//     states its probes decide: leaderhealth.go, its planned moves:
//     leadermoves.go) go through its fence: a deposed leader's write
//     changes nothing (fenced.go).
//
// With no Leadership (a single node) every group is led by this instance
// with term 0, and none of the above changes anything.

// Leadership is the election of one analyzer leader per group, as the
// balancer uses it. *leader.Elector implements it.
type Leadership interface {
	// Join campaigns for group, whose reports come every interval;
	// joining again updates the interval.
	Join(group string, interval time.Duration) error
	// Leave stops campaigning for group, resigning if it leads it.
	Leave(ctx context.Context, group string) error
	// Report records that a load report of group arrived (warm-up).
	Report(group string)
	// CanPlan tells whether this instance leads group and is warm.
	CanPlan(group string) bool
	// Fence is the fence of this instance's term in group; ok is false
	// when it does not lead it.
	Fence(group string) (f leader.Fence, ok bool)
	// Status is group's leadership as this instance sees it; ok is false
	// for a group not joined.
	Status(group string) (st leader.Status, ok bool)
}

var _ Leadership = (*leader.Elector)(nil)

// ErrNoLeader: in a cluster, the group has no analyzer leader this
// instance can send a report to (between leaders, or the leader's admin
// URL is unknown here); the admin API answers 503 no_leader with
// Retry-After.
var ErrNoLeader = errors.New("balancer: the group has no analyzer leader to take the report")

// NotLeaderError: in a cluster, a report reached an instance that does not
// lead the replica's group; the admin API answers 307 to URL.
type NotLeaderError struct {
	Group string
	// Leader is the leading instance's name, Term its term.
	Leader string
	Term   int64
	// URL is where the report goes: the leader's admin URL + /v1/report.
	URL string
}

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("balancer: group %s is led by instance %s (term %d): report to %s", e.Group, e.Leader, e.Term, e.URL)
}

// role is this instance's part in a group: lead (it leads the group: it
// takes reports, pulls and probes), plan (it leads and is warm: it plans
// and finishes removals) and term (its term while leading; 0 on a single
// node).
type role struct {
	lead, plan bool
	term       int64
	status     leader.Status
}

// leadLocked is what the group's step may decide (groupcore.Lead), at
// now, in role r. Caller holds g.mu.
func (g *group) leadLocked(r role, now time.Time) groupcore.Lead {
	if g.b.opts.Leadership == nil {
		return groupcore.Lead{Plan: true, Remove: true}
	}
	inOffice := r.lead && !g.leadSince.IsZero() && now.Sub(g.leadSince) >= leader.WarmupIntervals*g.spec.ReportInterval.D()
	return groupcore.Lead{Plan: r.plan, Remove: r.plan || inOffice}
}

// roleLocked is this instance's role in g now. Caller holds g.mu (lock
// order: g.mu before the Leadership's own lock).
func (g *group) roleLocked() role {
	l := g.b.opts.Leadership
	if l == nil {
		return role{lead: true, plan: true}
	}
	st, ok := l.Status(g.name)
	if !ok || st.State != leader.Leader {
		return role{status: st}
	}
	return role{lead: true, plan: st.CanPlan, term: st.Term, status: st}
}

// LeadershipChanged re-reads this instance's leadership of group and
// starts or stops what only the leader runs (pulls, active health
// checks). The Elector's Options.OnChange calls it; an unknown group is
// ignored. Safe to call at any time, any number of times.
func (b *Balancer) LeadershipChanged(group string) {
	b.mu.RLock()
	g := b.groups[group]
	b.mu.RUnlock()
	if g == nil {
		return
	}
	g.mu.Lock()
	g.syncLeadershipLocked()
	g.leaderEventLocked(g.roleLocked())
	g.mu.Unlock()
}

// syncLeadershipLocked brings g.leading in line with the role and, while
// the group runs, starts or stops the leader's pulls and probes. Caller
// holds g.mu.
func (g *group) syncLeadershipLocked() {
	r := g.roleLocked()
	if r.lead == g.leading {
		return
	}
	g.leading = r.lead
	g.leadSince = time.Time{}
	if r.lead {
		g.leadSince = g.b.now()
		g.b.log.Info("leading the group: taking reports, pulling and probing", "group", g.name, "term", r.term)
	} else {
		g.b.log.Info("not leading the group: reports go to the leader, who pulls and probes", "group", g.name, "leader", r.status.Leader, "leader_term", r.status.LeaderTerm)
	}
	if !g.running {
		return
	}
	for _, m := range g.order {
		if r.lead {
			g.startPullLocked(m)
		} else if m.pullStop != nil {
			close(m.pullStop)
			m.pullStop = nil
		}
	}
	g.health.leadershipLocked()
}

// joinLocked joins the group's election with its report interval (again
// when it changed). Caller holds g.mu.
func (g *group) joinLocked() {
	l := g.b.opts.Leadership
	if l == nil {
		return
	}
	if err := l.Join(g.name, g.spec.ReportInterval.D()); err != nil {
		g.b.log.Error("cannot join the group's analyzer election", "group", g.name, "err", err)
	}
}

// leave leaves the group's election (resigning if it leads), bounded by
// ctx. Caller must not hold g.mu.
func (g *group) leave(ctx context.Context) {
	l := g.b.opts.Leadership
	if l == nil {
		return
	}
	if err := l.Leave(ctx, g.name); err != nil {
		g.b.log.Warn("cannot resign the group's analyzer leadership; its lease ends it", "group", g.name, "err", err)
	}
}
