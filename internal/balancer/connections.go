package balancer

import (
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// MaxConnectionsPage bounds a page of a group's connection table.
const MaxConnectionsPage = 10_000

// Connections returns a page of group name's connection table: at most
// limit (clamped to [1, MaxConnectionsPage]) connections with ids above
// after, in id order. Groups of other protocols have an empty table.
// Errors: ErrUnknownGroup.
func (b *Balancer) Connections(name string, after uint64, limit int) (protocol.ConnectionList, error) {
	g, err := b.group(name)
	if err != nil {
		return protocol.ConnectionList{}, err
	}
	return g.conns.List(after, min(max(limit, 1), MaxConnectionsPage), b.now()), nil
}
