package balancer

import "github.com/fulcrum-lb/fulcrum/internal/affinity"

// SessionTable is group name's session table (nil for an unknown group or
// one without affinity rules), for tests that fill it without a front
// door.
func (b *Balancer) SessionTable(name string) *affinity.Table {
	g, err := b.group(name)
	if err != nil {
		return nil
	}
	return g.sessionTable()
}
