package protocol

import "fmt"

// BoundMoves tells a group's analyzer leader that clients it planned to
// move have bound at another instance's front door (POST
// /v1/cluster/bound), so that its analyzer completes their moves and it
// deletes their keys from etcd, as it does for the bindings at its own
// front door. The instances send these themselves, batched; never stored.
type BoundMoves struct {
	// Group is the group's name.
	Group string `json:"group"`
	// Term is the term of the leader that planned the moves (> 0); the
	// leader applies a notice of its own current term only.
	Term uint64 `json:"term"`
	// Moves are the bindings made, each client once.
	Moves []BoundMove `json:"moves"`
	// Instance is the sending instance's name (optional): the leader's
	// load push names it with the completed moves (LoadView.Completed).
	Instance string `json:"instance,omitempty"`
}

// BoundMove is one client bound by a planned move.
type BoundMove struct {
	// Client is the client's id.
	Client string `json:"client"`
	// Replica is the id of the replica the client was bound to.
	Replica string `json:"replica"`
}

// BoundAnswer answers POST /v1/cluster/bound.
type BoundAnswer struct {
	// Applied: the leader completed the moves. A notice is not applied
	// when its term is not the leader's current term (Reason says so).
	Applied bool   `json:"applied"`
	Reason  string `json:"reason,omitempty"`
}

// MaxBoundMoves bounds the moves of one BoundMoves.
const MaxBoundMoves = 1000

// maxBoundID bounds the length of a client or replica id in a
// BoundMoves.
const maxBoundID = 1024

// Validate checks a decoded notice; errors are *FieldError naming the
// field by its path, such as "moves[2].replica".
func (v BoundMoves) Validate() error {
	if v.Group == "" {
		return &FieldError{Field: "group", Value: v.Group, Allowed: "is required: the group's name"}
	}
	if v.Term == 0 {
		return &FieldError{Field: "term", Value: 0, Allowed: "is required: the term of the leader that planned the moves, > 0"}
	}
	if len(v.Moves) == 0 {
		return &FieldError{Field: "moves", Value: 0, Allowed: "must hold at least one move"}
	}
	if len(v.Moves) > MaxBoundMoves {
		return &FieldError{Field: "moves", Value: len(v.Moves), Allowed: fmt.Sprintf("must hold at most %d moves", MaxBoundMoves)}
	}
	seen := make(map[string]bool, len(v.Moves))
	for i, m := range v.Moves {
		at := fmt.Sprintf("moves[%d]", i)
		switch {
		case m.Client == "":
			return &FieldError{Field: at + ".client", Value: m.Client, Allowed: "is required: the client's id"}
		case len(m.Client) > maxBoundID:
			return &FieldError{Field: at + ".client", Value: len(m.Client), Allowed: fmt.Sprintf("must be at most %d bytes", maxBoundID)}
		case seen[m.Client]:
			return &FieldError{Field: at + ".client", Value: m.Client, Allowed: "must be unique in the notice"}
		case m.Replica == "":
			return &FieldError{Field: at + ".replica", Value: m.Replica, Allowed: "is required: the id of the replica the client was bound to"}
		case len(m.Replica) > maxBoundID:
			return &FieldError{Field: at + ".replica", Value: len(m.Replica), Allowed: fmt.Sprintf("must be at most %d bytes", maxBoundID)}
		}
		seen[m.Client] = true
	}
	return nil
}
