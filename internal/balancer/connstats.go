package balancer

import (
	"github.com/fulcrum-lb/fulcrum/internal/conntable"
)

// ConnectionStats are a group's connection table figures, for metrics.
type ConnectionStats struct {
	// Replicas are each replica's totals (conntable.Table.Totals):
	// connections open and accepted, bytes each way, closed connections
	// included. A replica that left the group stays until its last
	// connection has ended.
	Replicas map[string]conntable.ReplicaTotals
	// Refused counts the connections refused before they were proxied, by
	// reason (conntable.Refuse*).
	Refused map[string]uint64
}

// ConnectionStats returns group name's connection table figures; those of
// a group of another protocol are empty. Errors: ErrUnknownGroup.
func (b *Balancer) ConnectionStats(name string) (ConnectionStats, error) {
	g, err := b.group(name)
	if err != nil {
		return ConnectionStats{}, err
	}
	return ConnectionStats{Replicas: g.conns.Totals(), Refused: g.conns.Refusals()}, nil
}
