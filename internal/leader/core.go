package leader

import (
	"errors"
	"fmt"
	"time"
)

// WarmupIntervals is how many report intervals of fresh reports a new
// leader waits for before it plans moves.
const WarmupIntervals = 2

// ErrState is wrapped by Core methods given an event that does not fit
// the current state (a stale campaign result, a term that is not newer).
var ErrState = errors.New("leader: event does not fit the state")

// Core is one group's leadership on one instance, as pure decisions: it
// is told of campaigns, election results, lost sessions, observed
// leaders and load reports, each with the time they happened, and says
// what state the instance is in and whether it may plan moves. It reads
// no clock and does no I/O. Not safe for concurrent use: the Elector
// holds a lock around it.
//
// The rules:
//   - only a Leader plans, and a new leader plans nothing until it has had
//     WarmupIntervals report intervals of fresh reports: CanPlan(now) holds
//     once WarmupIntervals × interval have passed since the first report
//     that arrived in office;
//   - between leaders (no leader observed, or this instance a Follower,
//     Candidate or Deposed) nothing is planned; serving goes on from the
//     last view, which is the caller's business;
//   - a lost session deposes a leader at once (and ends a candidate's
//     campaign); so does an observed leader with a newer term, or no
//     leader observed at a revision at or after this leader's term (its
//     key is gone).
type Core struct {
	group    string
	self     string
	interval time.Duration

	state State
	term  int64 // while Leader or Deposed: the term won (last)

	firstReport time.Time // first report arrived in office; zero: none yet

	seen Observed // the latest observation (by Rev)
}

// NewCore returns the core of group for instance self, a Follower, with
// the group's report interval (> 0).
func NewCore(group, self string, interval time.Duration) *Core {
	return &Core{group: group, self: self, interval: interval}
}

// State is the current state.
func (c *Core) State() State { return c.state }

// Term is the term this instance holds as Leader (last held, when
// Deposed); 0 otherwise.
func (c *Core) Term() int64 {
	if c.state == Leader || c.state == Deposed {
		return c.term
	}
	return 0
}

// SetInterval changes the report interval (> 0) that warm-up counts in.
func (c *Core) SetInterval(d time.Duration) { c.interval = d }

func (c *Core) change(to State, term int64, why string) Change {
	ch := Change{Group: c.group, From: c.state, To: to, Term: term, Why: why}
	c.state = to
	return ch
}

// Campaign records that the instance began campaigning: a Follower or
// Deposed instance becomes a Candidate. ok is false (no change) in
// other states.
func (c *Core) Campaign() (ch Change, ok bool) {
	if c.state != Follower && c.state != Deposed {
		return Change{}, false
	}
	return c.change(Candidate, 0, "campaign"), true
}

// Elected records that the campaign won with term (the election key's
// create revision) at now. Only a Candidate can be elected, and only with
// a term newer than any observed; otherwise the result is stale and the
// error wraps ErrState.
func (c *Core) Elected(term int64, now time.Time) (Change, error) {
	if c.state != Candidate {
		return Change{}, fmt.Errorf("%w: group %q: elected with term %d while %s", ErrState, c.group, term, c.state)
	}
	if term <= 0 || term < c.seen.Term {
		return Change{}, fmt.Errorf("%w: group %q: elected with term %d, not newer than the observed term %d", ErrState, c.group, term, c.seen.Term)
	}
	c.term = term
	c.firstReport = time.Time{}
	return c.change(Leader, term, "elected"), nil
}

// SessionLost records that the instance's session ended (its lease
// expired or could not be kept alive): a Leader is Deposed at once, a
// Candidate's campaign ends (Follower).
func (c *Core) SessionLost() (ch Change, ok bool) {
	switch c.state {
	case Leader:
		return c.change(Deposed, c.term, "session lost"), true
	case Candidate:
		return c.change(Follower, 0, "session lost"), true
	}
	return Change{}, false
}

// Resign records that the instance resigned (shutdown, or it left the
// group): Leader and Candidate become Follower.
func (c *Core) Resign() (ch Change, ok bool) {
	switch c.state {
	case Leader:
		return c.change(Follower, c.term, "resigned"), true
	case Candidate, Deposed:
		return c.change(Follower, 0, "resigned"), true
	}
	return Change{}, false
}

// Observe records the group's leader as the election's keys show it. An
// observation older (by Rev) than the last one is ignored. A Leader is
// deposed by a leader with a newer term, or by no leader at a revision at
// or after its term (its key is gone); an older leader seen at a later
// revision is a lagging view of the handover and deposes nothing.
func (c *Core) Observe(o Observed) (ch Change, ok bool) {
	if o.Rev < c.seen.Rev {
		return Change{}, false
	}
	c.seen = o
	if c.state != Leader {
		return Change{}, false
	}
	switch {
	case o.Term > c.term:
		return c.change(Deposed, c.term, "newer leader"), true
	case o.Term == 0 && o.Rev >= c.term:
		return c.change(Deposed, c.term, "key gone"), true
	}
	return Change{}, false
}

// Leader is the group's leader as this instance knows it: itself while
// Leader, otherwise the last observed one ("" and 0: none known, between
// leaders).
func (c *Core) Leader() (instance string, term int64) {
	if c.state == Leader && c.term >= c.seen.Term {
		return c.self, c.term
	}
	if c.state == Deposed && c.seen.Term == c.term {
		// Our own key, seen before it went: not a leader any more.
		return "", 0
	}
	return c.seen.Instance, c.seen.Term
}

// Report records a load report that arrived at now. Only reports that
// arrive in office count towards warm-up.
func (c *Core) Report(now time.Time) {
	if c.state == Leader && c.firstReport.IsZero() {
		c.firstReport = now
	}
}

// CanPlan tells whether the instance may plan moves at now: it is Leader
// and WarmupIntervals report intervals have passed since the first report
// of its term.
func (c *Core) CanPlan(now time.Time) bool {
	at, ok := c.PlanFrom()
	return ok && !now.Before(at)
}

// PlanFrom is when a Leader may start planning: WarmupIntervals report
// intervals after the first report of its term. ok is false when the
// instance is not Leader or no report has arrived in office yet.
func (c *Core) PlanFrom() (at time.Time, ok bool) {
	if c.state != Leader || c.firstReport.IsZero() {
		return time.Time{}, false
	}
	return c.firstReport.Add(WarmupIntervals * c.interval), true
}
