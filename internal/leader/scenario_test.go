package leader_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/scripttest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestScenarios runs the scripts in testdata/*.txt (package scripttest's
// format) against one group's Core on a manual clock. Commands:
//
//	core self=NAME interval=D      a fresh core (a Follower) for group g
//	campaign                       the instance began campaigning
//	elected term=N                 its campaign won with term N
//	lost                           its session ended
//	resign                         it resigned
//	observe [leader=NAME term=N] rev=R   the election's keys at revision R
//	report                         a load report arrived now
//	tick D                         move the clock
//	status                         state, term, known leader, planning
//
// Every command prints the change it caused (or "no change") and the
// status; go test -run TestScenarios -rewrite rewrites the expected output.
func TestScenarios(t *testing.T) {
	scripttest.Run(t, "testdata/*.txt", func(t *testing.T) func(scripttest.Cmd) string {
		w := &world{t: t, now: t0}
		return w.run
	})
}

type world struct {
	t   *testing.T
	now time.Time
	c   *leader.Core
}

func (w *world) run(c scripttest.Cmd) string {
	if w.c == nil && c.Name != "core" {
		w.t.Fatalf("line %d: %s before core", c.Line, c.Name)
	}
	var ch leader.Change
	var ok bool
	switch c.Name {
	case "core":
		w.c = leader.NewCore("g", c.Args["self"], w.dur(c, c.Args["interval"]))
		return w.status()
	case "campaign":
		ch, ok = w.c.Campaign()
	case "elected":
		var err error
		ch, err = w.c.Elected(w.int(c, c.Args["term"]), w.now)
		if err != nil {
			return "error: " + err.Error() + "\n" + w.status()
		}
		ok = true
	case "lost":
		ch, ok = w.c.SessionLost()
	case "resign":
		ch, ok = w.c.Resign()
	case "observe":
		o := leader.Observed{Instance: c.Args["leader"], Rev: w.int(c, c.Args["rev"])}
		if v, has := c.Args["term"]; has {
			o.Term = w.int(c, v)
		}
		ch, ok = w.c.Observe(o)
	case "report":
		w.c.Report(w.now)
		return w.status()
	case "tick":
		w.now = w.now.Add(w.dur(c, c.Arg(0)))
		return fmt.Sprintf("now +%s\n%s", w.now.Sub(t0), w.status())
	case "status":
		return w.status()
	default:
		w.t.Fatalf("line %d: unknown command %q", c.Line, c.Name)
	}
	if !ok {
		return "no change\n" + w.status()
	}
	return ch.String() + "\n" + w.status()
}

func (w *world) status() string {
	inst, term := w.c.Leader()
	if inst == "" {
		inst = "none"
	}
	plan := "no"
	if at, ok := w.c.PlanFrom(); ok {
		plan = "from +" + at.Sub(t0).String()
	}
	return fmt.Sprintf("%s term=%d leader=%s@%d can-plan=%v plan=%s", w.c.State(), w.c.Term(), inst, term, w.c.CanPlan(w.now), plan)
}

func (w *world) dur(c scripttest.Cmd, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		w.t.Fatalf("line %d: %v", c.Line, err)
	}
	return d
}

func (w *world) int(c scripttest.Cmd, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		w.t.Fatalf("line %d: %v", c.Line, err)
	}
	return n
}
