package balancer

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// NotLeadingError: a bound notice (POST /v1/cluster/bound) reached an
// instance that does not lead the group; the admin API answers 409
// not_leader.
type NotLeadingError struct {
	Group string
	// Leader is the group's leader as this instance knows it ("" none).
	Leader string
	// Single: this instance is not in a cluster.
	Single bool
}

func (e *NotLeadingError) Error() string {
	if e.Single {
		return fmt.Sprintf("balancer: group %s is on a single node, not in a cluster: it takes no bound notices", e.Group)
	}
	if e.Leader == "" {
		return fmt.Sprintf("balancer: this instance does not lead group %s, which has no leader now", e.Group)
	}
	return fmt.Sprintf("balancer: this instance does not lead group %s: instance %s does", e.Group, e.Leader)
}

// TakeBound applies another instance's notice that clients bound at its
// front door by moves this instance planned (POST /v1/cluster/bound; the
// sender is in boundnotice.go): while this instance leads the group in
// the notice's term, its analyzer completes each move (as for a binding
// at its own front door) and the moves' keys are deleted from etcd. A
// notice that does not validate is a *protocol.FieldError; an unknown
// group wraps ErrUnknownGroup; an instance that does not lead the group
// (or a single node, which leads in term 0) answers *NotLeadingError; a
// notice of another term is answered with Applied false and why.
func (b *Balancer) TakeBound(v protocol.BoundMoves) (protocol.BoundAnswer, error) {
	if err := v.Validate(); err != nil {
		return protocol.BoundAnswer{}, err
	}
	g, err := b.group(v.Group)
	if err != nil {
		return protocol.BoundAnswer{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if b.opts.Leadership == nil {
		return protocol.BoundAnswer{}, &NotLeadingError{Group: g.name, Single: true}
	}
	r := g.roleLocked()
	if !r.lead || !g.leading {
		return protocol.BoundAnswer{}, &NotLeadingError{Group: g.name, Leader: r.status.Leader}
	}
	if v.Term != uint64(r.term) {
		return protocol.BoundAnswer{Reason: fmt.Sprintf("term %d is not term %d, this instance's term as leader of group %s", v.Term, r.term, g.name)}, nil
	}
	clients := make([]string, 0, len(v.Moves))
	for _, m := range v.Moves {
		g.core.Bound(m.Client, m.Replica)
		clients = append(clients, m.Client)
		g.emitLocked("binding", map[string]any{"client": m.Client, "replica": m.Replica, "planned": true, "elsewhere": true})
		g.completedLocked(m.Client, m.Replica, v.Instance) // leaderevents.go
	}
	g.movesCompletedLocked(clients)
	return protocol.BoundAnswer{Applied: true}, nil
}
