package analyzer_test

import (
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// scriptedStrategy answers each analysis with the next decision of its
// script (none once it runs out).
type scriptedStrategy struct {
	decisions []strategy.Decision
}

func (*scriptedStrategy) Name() string                               { return "scripted" }
func (*scriptedStrategy) Picker([]*strategy.Replica) strategy.Picker { return nil }
func (*scriptedStrategy) Dampening() float64                         { return 0 }

func (s *scriptedStrategy) Analyze(*strategy.Analysis) strategy.Decision {
	if len(s.decisions) == 0 {
		return strategy.Decision{}
	}
	d := s.decisions[0]
	s.decisions = s.decisions[1:]
	return d
}

// TestTentativePlansAreConfirmed: a tentative plan is carried out once
// analyses with one outnumber those without by ConfirmAnalyses; a plan
// that is not tentative at once.
func TestTentativePlansAreConfirmed(t *testing.T) {
	t.Parallel()
	move := strategy.Move{Client: "c1", From: "a", To: "b", Rate: 10}
	plan := func(tentative bool) strategy.Decision {
		return strategy.Decision{Moves: []strategy.Move{move},
			High: []strategy.Advice{{ID: "a", Shed: 10, Clients: []string{"c1"}}}, Tentative: tentative}
	}
	none := strategy.Decision{}
	for _, tc := range []struct {
		name      string
		decisions []strategy.Decision
		// carried is the analysis (from 1) whose plan is carried out; 0:
		// none is.
		carried int
	}{
		{"at once when not tentative", []strategy.Decision{plan(false)}, 1},
		{"after ConfirmAnalyses in a row", []strategy.Decision{plan(true), plan(true), plan(true), plan(true)}, analyzer.ConfirmAnalyses},
		{"a gap counts down", []strategy.Decision{plan(true), plan(true), none, plan(true), plan(true), plan(true)}, 6},
		{"noise that comes and goes never", []strategy.Decision{plan(true), none, plan(true), none, plan(true), none, plan(true), none}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if analyzer.ConfirmAnalyses != 4 {
				t.Fatalf("the cases assume ConfirmAnalyses 4, not %d", analyzer.ConfirmAnalyses)
			}
			s := &scriptedStrategy{decisions: tc.decisions}
			a := analyzer.New(s, time.Second)
			a.SetReplicas([]analyzer.ReplicaInfo{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}})
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			carried := 0
			for i := range tc.decisions {
				now = now.Add(time.Second)
				for _, id := range []string{"a", "b"} {
					if _, err := a.Report(id, protocol.Report{Load: 10, Clients: []protocol.ClientRate{{ID: "c1", Rate: 10}}}, now); err != nil {
						t.Fatal(err)
					}
				}
				if st := a.Step(now); len(st.Moves) > 0 && carried == 0 {
					carried = i + 1
				}
			}
			if carried != tc.carried {
				t.Errorf("plan carried out at analysis %d, want %d", carried, tc.carried)
			}
		})
	}
}
