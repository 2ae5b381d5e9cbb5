package leader_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/leader"
)

// coreIn returns a core brought into state st (a Leader or Deposed one of
// term 10).
func coreIn(t *testing.T, st leader.State) *leader.Core {
	t.Helper()
	c := leader.NewCore("g", "a", 100*time.Millisecond)
	steps := map[leader.State][]func(){
		leader.Follower:  nil,
		leader.Candidate: {func() { c.Campaign() }},
		leader.Leader:    {func() { c.Campaign() }, func() { mustElect(t, c, 10) }},
		leader.Deposed:   {func() { c.Campaign() }, func() { mustElect(t, c, 10) }, func() { c.SessionLost() }},
	}
	for _, f := range steps[st] {
		f()
	}
	if c.State() != st {
		t.Fatalf("set-up reached %s, want %s", c.State(), st)
	}
	return c
}

func mustElect(t *testing.T, c *leader.Core, term int64) {
	t.Helper()
	if _, err := c.Elected(term, t0); err != nil {
		t.Fatal(err)
	}
}

// TestTransitions holds every event in every state to the state machine
// of the package comment.
func TestTransitions(t *testing.T) {
	t.Parallel()
	events := map[string]func(c *leader.Core) (leader.Change, bool){
		"campaign": func(c *leader.Core) (leader.Change, bool) { return c.Campaign() },
		"elected 20": func(c *leader.Core) (leader.Change, bool) {
			ch, err := c.Elected(20, t0)
			return ch, err == nil
		},
		"session lost": func(c *leader.Core) (leader.Change, bool) { return c.SessionLost() },
		"resign":       func(c *leader.Core) (leader.Change, bool) { return c.Resign() },
		"newer leader": func(c *leader.Core) (leader.Change, bool) {
			return c.Observe(leader.Observed{Instance: "b", Term: 30, Rev: 30})
		},
		"no leader after":  func(c *leader.Core) (leader.Change, bool) { return c.Observe(leader.Observed{Rev: 12}) },
		"no leader before": func(c *leader.Core) (leader.Change, bool) { return c.Observe(leader.Observed{Rev: 9}) },
		"older leader lagged": func(c *leader.Core) (leader.Change, bool) {
			return c.Observe(leader.Observed{Instance: "b", Term: 5, Rev: 11})
		},
	}
	const no = leader.State(-1) // no change
	for _, tc := range []struct {
		from  leader.State
		event string
		to    leader.State
		why   string
	}{
		{leader.Follower, "campaign", leader.Candidate, "campaign"},
		{leader.Follower, "elected 20", no, ""},
		{leader.Follower, "session lost", no, ""},
		{leader.Follower, "resign", no, ""},
		{leader.Follower, "newer leader", no, ""},
		{leader.Candidate, "campaign", no, ""},
		{leader.Candidate, "elected 20", leader.Leader, "elected"},
		{leader.Candidate, "session lost", leader.Follower, "session lost"},
		{leader.Candidate, "resign", leader.Follower, "resigned"},
		{leader.Candidate, "newer leader", no, ""},
		{leader.Leader, "campaign", no, ""},
		{leader.Leader, "elected 20", no, ""},
		{leader.Leader, "session lost", leader.Deposed, "session lost"},
		{leader.Leader, "resign", leader.Follower, "resigned"},
		{leader.Leader, "newer leader", leader.Deposed, "newer leader"},
		{leader.Leader, "no leader after", leader.Deposed, "key gone"},
		{leader.Leader, "no leader before", no, ""},
		{leader.Leader, "older leader lagged", no, ""},
		{leader.Deposed, "campaign", leader.Candidate, "campaign"},
		{leader.Deposed, "elected 20", no, ""},
		{leader.Deposed, "session lost", no, ""},
		{leader.Deposed, "resign", leader.Follower, "resigned"},
		{leader.Deposed, "newer leader", no, ""},
	} {
		t.Run(tc.from.String()+"/"+tc.event, func(t *testing.T) {
			t.Parallel()
			c := coreIn(t, tc.from)
			ch, ok := events[tc.event](c)
			if tc.to == no {
				if ok || c.State() != tc.from {
					t.Errorf("%s in %s: changed to %s (%v), want no change", tc.event, tc.from, c.State(), ch)
				}
				return
			}
			if !ok || c.State() != tc.to || ch.From != tc.from || ch.To != tc.to || ch.Why != tc.why || ch.Group != "g" {
				t.Errorf("%s in %s: %v (ok %v, state %s), want %s -> %s (%s)", tc.event, tc.from, ch, ok, c.State(), tc.from, tc.to, tc.why)
			}
			if c.State() != leader.Leader && c.CanPlan(t0.Add(time.Hour)) {
				t.Errorf("a %s plans", c.State())
			}
		})
	}
}

func TestElectedStale(t *testing.T) {
	t.Parallel()
	c := coreIn(t, leader.Candidate)
	c.Observe(leader.Observed{Instance: "b", Term: 40, Rev: 41})
	if _, err := c.Elected(20, t0); !errors.Is(err, leader.ErrState) {
		t.Errorf("Elected(20) after term 40 was seen: %v, want ErrState", err)
	}
	if c.State() != leader.Candidate {
		t.Errorf("state %s after a stale result, want candidate", c.State())
	}
}
