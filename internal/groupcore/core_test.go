package groupcore_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

const interval = 100 * time.Millisecond

func newCore(t *testing.T, name, binding string) *groupcore.Core {
	t.Helper()
	s, err := strategy.New(name, nil, strategy.Env{Now: func() time.Time { return t0 }, Rand: strategy.NewRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	return groupcore.New(s, groupcore.Settings{Binding: binding, Interval: interval})
}

func noInflight(string) int64 { return 0 }

func TestBindingModesMatchRegistry(t *testing.T) {
	t.Parallel()
	for _, p := range [][2]string{
		{groupcore.PerSession, protocol.PerSession},
		{groupcore.OnDemand, protocol.OnDemand},
		{groupcore.PerRequest, protocol.PerRequest},
	} {
		if p[0] != p[1] {
			t.Errorf("groupcore binding %q, registry %q", p[0], p[1])
		}
	}
}

// TestNoIO keeps the core pure (STYLE items 1 and 2): no net, no os, no
// registry, and no reading of the clock.
func TestNoIO(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range src.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "os" || p == "net" || strings.HasPrefix(p, "net/") || p == "github.com/fulcrum-lb/fulcrum/internal/registry" {
				t.Errorf("%s imports %s", f, p)
			}
		}
		ast.Inspect(src, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Now" || sel.Sel.Name == "NewTicker" || sel.Sel.Name == "Since") {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" {
					t.Errorf("%s: reads the clock", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
}

// TestStatesReachTheAnalyzer: a replica that is not active gets `drain`
// and is back to nominal once active again.
func TestStatesReachTheAnalyzer(t *testing.T) {
	t.Parallel()
	c := newCore(t, strategy.RoundRobinName, groupcore.PerSession)
	if got := c.Add("a", 1, groupcore.Lifecycle{}); got != analyzer.StateActive {
		t.Fatalf("added replica is %s, want active", got)
	}
	for _, ev := range []groupcore.Event{groupcore.HealthDown, groupcore.HealthUp, groupcore.Ejected, groupcore.Readmitted, groupcore.Drain, groupcore.Activate} {
		l, changed, err := c.Apply("a", ev, t0)
		if err != nil || !changed {
			t.Fatalf("Apply(%s) = %v, %v", ev, changed, err)
		}
		want := protocol.Nominal
		if l.State() != analyzer.StateActive {
			want = protocol.Drain
		}
		if adv := c.Advisory("a"); adv.Advisory != want || adv.ReportInterval.D() != interval {
			t.Errorf("after %s (%s): advisory %+v, want %s with the interval", ev, l.State(), adv, want)
		}
		st := c.Step(t0, noInflight)
		if st.Replicas[0].State != l.State() {
			t.Errorf("after %s: step state %s, want %s", ev, st.Replicas[0].State, l.State())
		}
	}
	if _, _, err := c.Apply("nope", groupcore.Drain, t0); !errors.Is(err, groupcore.ErrUnknownReplica) {
		t.Errorf("Apply to an unknown replica: %v, want ErrUnknownReplica", err)
	}
	c.Apply("a", groupcore.HealthDown, t0)
	if !c.ApplyAll(groupcore.HealthUp, t0) || c.State("a") != analyzer.StateActive {
		t.Errorf("ApplyAll(health-up) left a %s", c.State("a"))
	}
}

// TestOnlyOnDemandGetsHigh feeds a least-loaded core in each binding mode
// an imbalance it plans a move for: only on-demand monitors see `high`
// and only on-demand steps carry planned moves; the analyzer's plan is
// the same in all three.
func TestOnlyOnDemandGetsHigh(t *testing.T) {
	t.Parallel()
	for _, binding := range []string{groupcore.OnDemand, groupcore.PerSession, groupcore.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			c := newCore(t, strategy.LeastLoadedName, binding)
			c.Add("a", 1, groupcore.Lifecycle{})
			c.Add("b", 1, groupcore.Lifecycle{})
			now := t0
			var st groupcore.Step
			for range 10 {
				now = now.Add(interval)
				c.Report("a", protocol.Report{Load: 100, Clients: []protocol.ClientRate{{ID: "c1", Rate: 60}, {ID: "c2", Rate: 40}}}, now)
				c.Report("b", protocol.Report{Load: 10, Clients: []protocol.ClientRate{{ID: "c3", Rate: 10}}}, now)
				if st = c.Step(now, noInflight); len(st.Moves) > 0 {
					break
				}
			}
			if len(st.Moves) != 1 || st.Moves[0].Client != "c2" {
				t.Fatalf("moves %+v, want c2's", st.Moves)
			}
			adv := c.Advisory("a")
			view := st.Replicas[0].Advisory
			if binding == groupcore.OnDemand {
				if adv.Advisory != protocol.High || !slices.Equal(adv.Clients, []string{"c2"}) || view.Advisory != protocol.High {
					t.Errorf("on-demand advisory %+v (step %+v), want high naming c2", adv, view)
				}
				if len(st.Planned) != 1 {
					t.Errorf("on-demand planned %+v, want the move", st.Planned)
				}
				return
			}
			if adv.Advisory != protocol.Nominal || adv.Shed != 0 || adv.Clients != nil || view.Advisory != protocol.Nominal {
				t.Errorf("%s advisory %+v (step %+v), want nominal", binding, adv, view)
			}
			if st.Planned != nil {
				t.Errorf("%s planned %+v, want none", binding, st.Planned)
			}
			rep, err := c.Report("a", protocol.Report{Load: 100}, now)
			if err != nil || rep.Advisory != protocol.Nominal {
				t.Errorf("%s report answer %+v, %v; want nominal", binding, rep, err)
			}
		})
	}
}

// TestResetAtTheStepAfterAReport: a replica is listed in Step.Reset at the
// first step after each report, and only then.
func TestResetAtTheStepAfterAReport(t *testing.T) {
	t.Parallel()
	c := newCore(t, strategy.LeastLoadedName, groupcore.PerSession)
	c.Add("a", 1, groupcore.Lifecycle{})
	c.Add("b", 1, groupcore.Lifecycle{})
	if st := c.Step(t0, noInflight); st.Reset != nil {
		t.Fatalf("reset before any report: %v", st.Reset)
	}
	if _, err := c.Report("b", protocol.Report{Load: 1}, t0); err != nil {
		t.Fatal(err)
	}
	c.Report("b", protocol.Report{Load: 2}, t0)
	if st := c.Step(t0.Add(interval), noInflight); !slices.Equal(st.Reset, []string{"b"}) {
		t.Errorf("reset after b's reports: %v, want [b]", st.Reset)
	}
	if st := c.Step(t0.Add(2*interval), noInflight); st.Reset != nil {
		t.Errorf("reset at a step without reports: %v", st.Reset)
	}
	if _, err := c.Report("nope", protocol.Report{}, t0); !errors.Is(err, groupcore.ErrUnknownReplica) {
		t.Errorf("report of an unknown replica: %v", err)
	}
}

// TestRemoval: a removed replica leaves at the first step at which it is
// idle (by its fresh report and the caller's calls in flight), or after
// the drain timeout however busy.
func TestRemoval(t *testing.T) {
	t.Parallel()
	busy := protocol.Report{Load: 10, Metrics: map[string]float64{protocol.MetricRPS: 10}}
	idle := protocol.Report{Load: 0, Metrics: map[string]float64{protocol.MetricRPS: 0, protocol.MetricInflight: 0}}
	tests := []struct {
		name     string
		report   *protocol.Report
		inflight int64
		after    time.Duration // of draining before the step
		removed  bool
	}{
		{name: "unreported and no calls", removed: true},
		{name: "unreported with a call in flight", inflight: 1},
		{name: "reported busy", report: &busy},
		{name: "reported idle", report: &idle, removed: true},
		{name: "reported idle with a call in flight", report: &idle, inflight: 1},
		{name: "busy until the timeout", report: &busy, after: groupcore.MinDrainTimeout},
		{name: "busy past the timeout", report: &busy, after: groupcore.MinDrainTimeout + time.Millisecond, removed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCore(t, strategy.RoundRobinName, groupcore.PerSession)
			c.Add("a", 1, groupcore.Lifecycle{})
			c.Add("b", 1, groupcore.Lifecycle{})
			now := t0.Add(time.Hour)
			if tt.report != nil {
				c.Report("a", *tt.report, now.Add(tt.after))
			}
			if _, _, err := c.Apply("a", groupcore.Remove, now); err != nil {
				t.Fatal(err)
			}
			inflight := func(id string) int64 {
				if id == "a" {
					return tt.inflight
				}
				return 0
			}
			st := c.Step(now.Add(tt.after), inflight)
			if got := slices.Equal(st.Removed, []string{"a"}); got != tt.removed {
				t.Fatalf("removed %v, want a removed: %v", st.Removed, tt.removed)
			}
			if tt.removed && (c.State("a") != "" || len(c.Step(now.Add(tt.after), noInflight).Replicas) != 1) {
				t.Errorf("a removed replica is still known: %q", c.State("a"))
			}
			if !tt.removed && c.State("a") != analyzer.StateDraining {
				t.Errorf("a replica being removed is %q, want draining", c.State("a"))
			}
		})
	}
	c := newCore(t, strategy.RoundRobinName, groupcore.PerSession)
	if c.DrainTimeout() != groupcore.MinDrainTimeout {
		t.Errorf("drain timeout at %s: %s", interval, c.DrainTimeout())
	}
	c.Configure(groupcore.Settings{Interval: time.Second})
	if c.DrainTimeout() != 10*time.Second {
		t.Errorf("drain timeout at 1s: %s, want 10s", c.DrainTimeout())
	}
}
