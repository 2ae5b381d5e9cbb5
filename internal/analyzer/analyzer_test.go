package analyzer_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/scripttest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestStatesMatchRegistry(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{
		{analyzer.StateActive, protocol.StateActive},
		{analyzer.StateDraining, protocol.StateDraining},
		{analyzer.StateEjected, protocol.StateEjected},
		{analyzer.StateDown, protocol.StateDown},
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("analyzer state %q, registry %q", p[0], p[1])
		}
	}
}

// TestNoIO keeps the analyzer a pure core (STYLE items 1 and 2): no net, no
// os, and no reading of the clock.
func TestNoIO(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "os" || p == "net" || strings.HasPrefix(p, "net/") || p == "github.com/fulcrum-lb/fulcrum/internal/registry" {
				t.Errorf("%s imports %s", f, p)
			}
		}
		src, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(src, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Now" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" {
					t.Errorf("%s: reads the clock", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
}

func TestReportUnknownReplica(t *testing.T) {
	t.Parallel()
	s, _ := strategy.New(strategy.LeastLoadedName, nil, strategy.Env{Rand: strategy.NewRand(1)})
	a := analyzer.New(s, time.Second)
	_, err := a.Report("nope", protocol.Report{Load: 1}, time.Unix(0, 0))
	if !errors.Is(err, analyzer.ErrUnknownReplica) {
		t.Errorf("error %v, want ErrUnknownReplica", err)
	}
	if adv := a.Advisory("nope"); adv.Advisory != protocol.Nominal || adv.ReportInterval.D() != time.Second {
		t.Errorf("advisory of an unknown replica %+v", adv)
	}
}

func TestNewPanicsOnBrokenPreconditions(t *testing.T) {
	t.Parallel()
	s, _ := strategy.New(strategy.RoundRobinName, nil, strategy.Env{})
	for name, f := range map[string]func(){
		"nil strategy":  func() { analyzer.New(nil, time.Second) },
		"zero interval": func() { analyzer.New(s, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestReportIntervalOnEveryAdvisory(t *testing.T) {
	t.Parallel()
	s, _ := strategy.New(strategy.LeastLoadedName, nil, strategy.Env{Rand: strategy.NewRand(1)})
	a := analyzer.New(s, 500*time.Millisecond)
	a.SetReplicas([]analyzer.ReplicaInfo{{ID: "a", Weight: 1}})
	adv, err := a.Report("a", protocol.Report{Load: 3}, time.Unix(0, 0))
	if err != nil || adv.ReportInterval.D() != 500*time.Millisecond {
		t.Fatalf("advisory %+v, %v", adv, err)
	}
	a.SetInterval(2 * time.Second)
	if got := a.Advisory("a").ReportInterval.D(); got != 2*time.Second {
		t.Errorf("interval after SetInterval %v", got)
	}
	// The advisory returned is a copy: changing it changes nothing.
	adv.Clients = append(adv.Clients, "x")
	if len(a.Advisory("a").Clients) != 0 {
		t.Errorf("advisory shares its clients slice")
	}
}

// TestDemoConvergesFromAnyBinding is the demo's promise as a property: from
// any initial binding of the TAO paper's mix (4×100 and 4×50 calls/s over four
// replicas), with measured rates off by up to ±5%, least-loaded and
// minimum-dispersion with their defaults bring every replica within ±10% of
// the mean within a few report intervals, and then move nothing.
func TestDemoConvergesFromAnyBinding(t *testing.T) {
	t.Parallel()
	rates := []float64{100, 100, 100, 100, 50, 50, 50, 50}
	for _, name := range []string{strategy.LeastLoadedName, strategy.MinimumDispersionName} {
		for seed := range uint64(200) {
			rng := rand.New(rand.NewPCG(seed, 99))
			s := newScenario(t)
			s.run(scripttest.ParseCmd(fmt.Sprintf("strategy %s seed=%d", name, seed)))
			for _, id := range []string{"a", "b", "c", "d"} {
				s.run(scripttest.ParseCmd("add-replica id=" + id))
			}
			for i, r := range rates {
				id := fmt.Sprint("c", i)
				s.clients[id] = &simClient{id: id, rate: r, replica: string(rune('a' + rng.IntN(4)))}
			}
			balancedAt, lastMove := -1, -1
			for round := 1; round <= 30; round++ {
				_, moved := s.simRound(0.05, rng)
				if len(moved) > 0 {
					lastMove = round
				}
				if balancedAt < 0 && s.spread() <= 0.10 {
					balancedAt = round
				}
				if balancedAt >= 0 && s.spread() > 0.10 {
					t.Fatalf("%s seed %d: balanced at round %d, out again at %d (%s)", name, seed, balancedAt, round, s.worldLoads())
				}
			}
			if balancedAt < 0 || balancedAt > 4 {
				t.Errorf("%s seed %d: balanced at round %d (%s)", name, seed, balancedAt, s.worldLoads())
			}
			if lastMove > balancedAt {
				t.Errorf("%s seed %d: moves at round %d after balance at %d", name, seed, lastMove, balancedAt)
			}
		}
	}
}

// spread is the simulated clients' spread over the active replicas.
func (s *scenario) spread() float64 {
	var loads, weights []float64
	for _, in := range s.infos {
		if in.State == analyzer.StateActive {
			loads = append(loads, s.worldLoad(in.ID))
			weights = append(weights, in.Weight)
		}
	}
	return strategy.Spread(loads, weights)
}

// TestRandomMixesSettle: for random groups and client mixes (2 to 6
// replicas of weight 1 or 2, 2 to 13 clients of 5 to 104 calls/s), with
// measured rates off by up to ±5%, the adaptive strategies settle: after
// the first 15 report intervals no group makes more than one more plan
// (no paroxysms), and only a few make any. Those few are noise letting
// through a plan that narrows the spread by a little less than the
// tolerance asks; the move pin (MovePinIntervals) keeps the rare swap of
// two clients of nearly equal rate from repeating.
func TestRandomMixesSettle(t *testing.T) {
	t.Parallel()
	late := 0
	const trials = 300
	for seed := range uint64(trials) {
		rng := rand.New(rand.NewPCG(seed, 7))
		name := []string{strategy.LeastLoadedName, strategy.MinimumDispersionName}[seed%2]
		s := newScenario(t)
		s.run(scripttest.ParseCmd(fmt.Sprintf("strategy %s seed=%d", name, seed)))
		n := 2 + rng.IntN(5)
		for i := range n {
			s.run(scripttest.ParseCmd(fmt.Sprintf("add-replica id=r%d weight=%d", i, 1+rng.IntN(2))))
		}
		m := 2 + rng.IntN(12)
		for i := range m {
			id := fmt.Sprint("c", i)
			s.clients[id] = &simClient{id: id, rate: float64(5 + rng.IntN(100)), replica: fmt.Sprint("r", rng.IntN(n))}
		}
		plans := 0
		for round := 1; round <= 40; round++ {
			_, moved := s.simRound(0.05, rng)
			if round > 15 && len(moved) > 0 {
				plans++
			}
		}
		if plans > 1 {
			t.Errorf("%s seed %d: %d plans after round 15", name, seed, plans)
		}
		if plans > 0 {
			late++
		}
	}
	if late > trials/20 {
		t.Errorf("%d of %d groups still moving clients after 15 rounds", late, trials)
	}
}
