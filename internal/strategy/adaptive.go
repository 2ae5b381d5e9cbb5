package strategy

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Adaptive is implemented by report-driven strategies (least-loaded,
// minimum-dispersion, ...). The analyzer keeps every replica's effective
// load as L = d·L_prev + (1−d)·sample with d = Dampening(), and calls
// Analyze once per step with the group's current view. Analyze is pure: it
// must not keep references to its input.
type Adaptive interface {
	Strategy
	// Dampening is d in [0,1), the weight of the previous effective load.
	Dampening() float64
	// Analyze decides this step's advisories and planned moves.
	Analyze(in *Analysis) Decision
}

// LoadState is one active replica as the analyzer sees it.
type LoadState struct {
	ID     string
	Weight float64
	// Reported is false when the replica has no fresh report; Load is then
	// unknown (not zero).
	Reported bool
	// Load is the effective (dampened) load.
	Load float64
	// Sample is the last raw reported load.
	Sample float64
	// Clients are the busiest bound clients of the last report.
	Clients []protocol.ClientRate
	// Pinned are listed clients the analyzer moved recently and keeps out
	// of Clients; a strategy may name them only in a tentative plan
	// (Decision.Tentative), which the analyzer confirms before acting.
	Pinned []protocol.ClientRate
}

// Analysis is the input of one analyzer step.
type Analysis struct {
	Now time.Time
	// Replicas are the group's active replicas (draining, down and ejected
	// ones are handled by the analyzer itself).
	Replicas []LoadState
}

// Advice is a strategy's word for one replica in one step. Replicas not
// named get nominal.
type Advice struct {
	ID string
	// Shed is the amount of load to move away (> 0 for high).
	Shed float64
	// Clients names the bound clients to send back, if the strategy planned
	// them.
	Clients []string
}

// Move is one planned rebinding: Client, now on From with call rate Rate,
// goes to To when it comes back to the front door.
type Move struct {
	Client string  `json:"client"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	Rate   float64 `json:"rate"`
}

// Decision is the result of one analysis step.
type Decision struct {
	// High lists the replicas that should shed load.
	High []Advice
	// Moves is the plan behind High, when the strategy planned one.
	Moves []Move
	// Tentative: the plan is a refinement whose gain measurement noise
	// could have made up; the analyzer carries it out only once analyses
	// keep planning one (analyzer.ConfirmAnalyses), and until then takes
	// the decision as none.
	Tentative bool
}
