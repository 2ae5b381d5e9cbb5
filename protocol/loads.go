package protocol

import (
	"fmt"
	"math"
)

// LoadView is a group's analyzer leader's view of its replicas' loads,
// which the leader pushes to the other instances of a cluster (POST
// /v1/cluster/loads) about once per report interval, so that their front
// doors pick from the same loads. Never stored.
type LoadView struct {
	// Group is the group's name.
	Group string `json:"group"`
	// Term is the leader's term (> 0); an instance ignores a view whose
	// term is below the highest it has seen for the group.
	Term uint64 `json:"term"`
	// Leader is the leading instance's name.
	Leader string `json:"leader"`
	// Replicas are the group's replicas as the leader sees them.
	Replicas []ReplicaLoad `json:"replicas"`
	// Moves are the moves the leader's analyzer has planned and not yet
	// seen completed or expired. The other instances show them, with the
	// advisories of Replicas, in their event streams (GET /v1/events).
	Moves []PlannedMove `json:"moves,omitempty"`
	// Completed are the planned moves the leader saw completed since its
	// last push, where it knows of them: at its own front door, or by a
	// bound notice of another instance. The other instances show them as
	// "binding" events, but the instance where the client bound.
	Completed []CompletedMove `json:"completed,omitempty"`
}

// CompletedMove is a planned move completed: Client bound to Replica at
// the front door of Instance ("" when the leader does not know which).
type CompletedMove struct {
	Client   string `json:"client"`
	Replica  string `json:"replica"`
	Instance string `json:"instance,omitempty"`
}

// PlannedMove is one move of a LoadView: a bound client the leader sends
// from one replica to another.
type PlannedMove struct {
	Client string  `json:"client"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	Rate   float64 `json:"rate"`
}

// ReplicaLoad is one replica's load in a LoadView.
type ReplicaLoad struct {
	ID string `json:"id"`
	// Reported: the replica's last report is fresh; Load, Metrics and
	// Clients are meaningful only then.
	Reported bool `json:"reported"`
	// Load is the effective (dampened) load.
	Load float64 `json:"load"`
	// Sample is the last reported load, before dampening.
	Sample float64 `json:"sample"`
	// Metrics are the reported metrics.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Clients is how many bound clients the last report listed.
	Clients int `json:"clients,omitempty"`
	// ReportAgeMS is how long ago, in milliseconds, the last report
	// arrived at the leader (absent: never).
	ReportAgeMS *int64 `json:"report_age_ms,omitempty"`
	// Advisory, Shed and Epoch are the leader's current advisory to the
	// replica (as in Advisory; absent: nominal, 0, 0).
	Advisory string  `json:"advisory,omitempty"`
	Shed     float64 `json:"shed,omitempty"`
	Epoch    uint64  `json:"epoch,omitempty"`
}

// LoadsAnswer answers POST /v1/cluster/loads.
type LoadsAnswer struct {
	// Applied: the receiving instance now picks from the view. A view is
	// not applied by the group's own leader, or when its term is below the
	// highest the instance has seen (Reason says which).
	Applied bool   `json:"applied"`
	Reason  string `json:"reason,omitempty"`
}

// MaxLoadViewReplicas bounds the replicas of one LoadView, and
// MaxLoadViewMoves its moves.
const (
	MaxLoadViewReplicas = 10000
	MaxLoadViewMoves    = 10000
)

// Validate checks a decoded view; errors are *FieldError naming the field
// by its path, such as "replicas[2].load".
func (v LoadView) Validate() error {
	if v.Group == "" {
		return &FieldError{Field: "group", Value: v.Group, Allowed: "is required: the group's name"}
	}
	if v.Term == 0 {
		return &FieldError{Field: "term", Value: 0, Allowed: "is required: the leader's term, > 0"}
	}
	if v.Leader == "" {
		return &FieldError{Field: "leader", Value: v.Leader, Allowed: "is required: the leading instance's name"}
	}
	if len(v.Replicas) > MaxLoadViewReplicas {
		return &FieldError{Field: "replicas", Value: len(v.Replicas), Allowed: fmt.Sprintf("must hold at most %d replicas", MaxLoadViewReplicas)}
	}
	seen := make(map[string]bool, len(v.Replicas))
	for i, r := range v.Replicas {
		at := fmt.Sprintf("replicas[%d]", i)
		switch {
		case r.ID == "":
			return &FieldError{Field: at + ".id", Value: r.ID, Allowed: "is required: the replica's id"}
		case seen[r.ID]:
			return &FieldError{Field: at + ".id", Value: r.ID, Allowed: "must be unique in the view"}
		case !finite(r.Load) || r.Load < 0:
			return &FieldError{Field: at + ".load", Value: r.Load, Allowed: "must be a finite number >= 0"}
		case !finite(r.Sample) || r.Sample < 0:
			return &FieldError{Field: at + ".sample", Value: r.Sample, Allowed: "must be a finite number >= 0"}
		case r.Clients < 0:
			return &FieldError{Field: at + ".clients", Value: r.Clients, Allowed: "must be >= 0"}
		case r.ReportAgeMS != nil && *r.ReportAgeMS < 0:
			return &FieldError{Field: at + ".report_age_ms", Value: *r.ReportAgeMS, Allowed: "must be >= 0"}
		case r.Advisory != "" && r.Advisory != Nominal && r.Advisory != High && r.Advisory != Drain:
			return &FieldError{Field: at + ".advisory", Value: r.Advisory, Allowed: "must be nominal, high or drain (or absent)"}
		case !finite(r.Shed) || r.Shed < 0:
			return &FieldError{Field: at + ".shed", Value: r.Shed, Allowed: "must be a finite number >= 0"}
		}
		for k, x := range r.Metrics {
			if !finite(x) {
				return &FieldError{Field: at + ".metrics." + k, Value: x, Allowed: "must be a finite number"}
			}
		}
		seen[r.ID] = true
	}
	return v.validateMoves()
}

// validateMoves checks the view's moves.
func (v LoadView) validateMoves() error {
	if len(v.Moves) > MaxLoadViewMoves {
		return &FieldError{Field: "moves", Value: len(v.Moves), Allowed: fmt.Sprintf("must hold at most %d moves", MaxLoadViewMoves)}
	}
	for i, m := range v.Moves {
		at := fmt.Sprintf("moves[%d]", i)
		switch {
		case m.Client == "":
			return &FieldError{Field: at + ".client", Value: m.Client, Allowed: "is required: the moved client's id"}
		case m.To == "":
			return &FieldError{Field: at + ".to", Value: m.To, Allowed: "is required: the replica the client goes to"}
		case !finite(m.Rate) || m.Rate < 0:
			return &FieldError{Field: at + ".rate", Value: m.Rate, Allowed: "must be a finite number >= 0"}
		}
	}
	if len(v.Completed) > MaxLoadViewMoves {
		return &FieldError{Field: "completed", Value: len(v.Completed), Allowed: fmt.Sprintf("must hold at most %d moves", MaxLoadViewMoves)}
	}
	for i, m := range v.Completed {
		at := fmt.Sprintf("completed[%d]", i)
		switch {
		case m.Client == "":
			return &FieldError{Field: at + ".client", Value: m.Client, Allowed: "is required: the bound client's id"}
		case m.Replica == "":
			return &FieldError{Field: at + ".replica", Value: m.Replica, Allowed: "is required: the replica the client bound to"}
		}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
