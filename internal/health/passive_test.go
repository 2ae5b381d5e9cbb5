package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A passive scenario is a list of steps, each "at op args -> changes":
//
//	add a b c        track replicas
//	remove a         stop tracking
//	fail a | ok a    a call to a failed or succeeded
//	tick             bring back replicas whose ejection ended
//	next             NextReturn, as an offset from t0 ("-": none)
//
// and what the step must report: the changes ("a:ejected", "a:up b:up";
// empty for none), or for next the offset. Times are offsets from an arbitrary t0.
type passiveStep struct {
	at   time.Duration
	cmd  string
	want string
}

func runPassive(t *testing.T, cfg protocol.Passive, steps []passiveStep) {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := NewPassive(cfg)
	for i, s := range steps {
		now := t0.Add(s.at)
		f := strings.Fields(s.cmd)
		var got []string
		switch f[0] {
		case "add":
			for _, id := range f[1:] {
				p.Add(id)
			}
		case "remove":
			p.Remove(f[1])
		case "fail", "ok":
			if c, ok := p.Observe(f[1], f[0] == "fail", now); ok {
				got = append(got, c.ID+":"+c.State)
			}
		case "tick":
			for _, c := range p.Tick(now) {
				got = append(got, c.ID+":"+c.State)
			}
		case "next":
			at, ok := p.NextReturn()
			g := "-"
			if ok {
				g = at.Sub(t0).String()
			}
			if g != s.want {
				t.Fatalf("step %d (%v %s): next return %s, want %s", i, s.at, s.cmd, g, s.want)
			}
			continue
		default:
			t.Fatalf("step %d: unknown command %q", i, s.cmd)
		}
		if g := strings.Join(got, " "); g != s.want {
			t.Fatalf("step %d (%v %s): changes %q, want %q", i, s.at, s.cmd, g, s.want)
		}
	}
}

func passiveCfg(failures int, base time.Duration, pct int) protocol.Passive {
	return protocol.Passive{ConsecutiveFailures: failures, BaseEjection: protocol.Duration(base), MaxEjectedPercent: pct}
}

func TestPassive(t *testing.T) {
	t.Parallel()
	s := time.Second
	for _, tc := range []struct {
		name  string
		cfg   protocol.Passive
		steps []passiveStep
	}{
		{"ejected after consecutive failures", passiveCfg(3, 10*s, 100), []passiveStep{
			{0, "add a b", ""},
			{0, "fail a", ""}, {0, "fail a", ""},
			{0, "ok a", ""}, // a success resets the count
			{1 * s, "fail a", ""}, {1 * s, "fail a", ""},
			{1 * s, "fail a", "a:ejected"},
			{1 * s, "next", "11s"},
			{2 * s, "fail a", ""}, // calls still finishing while ejected
			{10 * s, "tick", ""},
			{11 * s, "tick", "a:up"},
			{11 * s, "next", "-"},
		}},
		{"ejections grow with repeats, capped, then forgiven", passiveCfg(1, 10*s, 100), []passiveStep{
			{0, "add a b", ""},
			{0, "fail a", "a:ejected"}, // 1 × 10s
			{10 * s, "tick", "a:up"},
			{11 * s, "fail a", "a:ejected"}, // back 1s: 2 × 10s
			{30 * s, "tick", ""},
			{31 * s, "tick", "a:up"},
			{32 * s, "fail a", "a:ejected"}, // 3 × 10s
			{62 * s, "tick", "a:up"},
			// back at 62s after a 30s ejection: forgiven from 92s on.
			{92 * s, "fail a", "a:ejected"}, // a first ejection again
			{101 * s, "tick", ""},
			{102 * s, "tick", "a:up"},
		}},
		{"at most the share of the group", passiveCfg(1, 10*s, 50), []passiveStep{
			{0, "add a b c d", ""},
			{0, "fail a", "a:ejected"},
			{0, "fail b", "b:ejected"},
			{0, "fail c", ""}, // 2 of 4 already out
			{10 * s, "tick", "a:up b:up"},
			{10 * s, "fail c", "c:ejected"},
		}},
		{"removing replicas keeps the count", passiveCfg(1, 10*s, 50), []passiveStep{
			{0, "add a b c d", ""},
			{0, "fail a", "a:ejected"},
			{0, "fail b", "b:ejected"},
			{0, "remove a", ""},
			{0, "fail c", ""}, // 1 of 3 out, 1 allowed
			{0, "add e", ""},
			{0, "fail c", "c:ejected"}, // 1 of 4 out, 2 allowed
			{10 * s, "tick", "b:up c:up"},
		}},
		{"a lone replica is never ejected at 50%", passiveCfg(1, 10*s, 50), []passiveStep{
			{0, "fail a", ""}, {0, "fail a", ""}, {0, "fail a", ""},
		}},
		{"disabled", passiveCfg(-1, 10*s, 100), []passiveStep{
			{0, "add a b", ""},
			{0, "fail a", ""}, {0, "fail a", ""}, {0, "fail a", ""}, {0, "fail a", ""}, {0, "fail a", ""},
		}},
		{"zero settings take the defaults", protocol.Passive{MaxEjectedPercent: 100}, []passiveStep{
			{0, "fail a", ""}, {0, "fail a", ""}, {0, "fail a", ""}, {0, "fail a", ""},
			{0, "fail a", "a:ejected"},
			{0, "next", "30s"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runPassive(t, tc.cfg, tc.steps)
		})
	}
}

func TestPassiveEjectionCap(t *testing.T) {
	t.Parallel()
	p := NewPassive(passiveCfg(1, time.Second, 100))
	p.Add("b")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for n := 1; n <= MaxEjectionMultiplier+3; n++ {
		if _, ok := p.Observe("a", true, now); !ok {
			t.Fatalf("ejection %d did not happen", n)
		}
		want := time.Duration(min(n, MaxEjectionMultiplier)) * time.Second
		if got := p.EjectedUntil("a").Sub(now); got != want {
			t.Fatalf("ejection %d lasts %v, want %v", n, got, want)
		}
		now = p.EjectedUntil("a")
		if c := p.Tick(now); fmt.Sprint(c) != "[{a up}]" {
			t.Fatalf("tick: %v", c)
		}
	}
}
