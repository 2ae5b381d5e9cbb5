package balancer

import (
	"github.com/fulcrum-lb/fulcrum/internal/registry"
)

// dropInvalidAddressesLocked removes the members whose address is not
// valid for the group's protocol — HTTP URLs left in a group that became
// GIOP, IORs and corbaloc URLs in one that became HTTP — and queues their
// deletion from the store, with a warning naming each (why says what
// brought the check on). It reports whether it removed any. Caller holds
// g.mu and flushes the writes after releasing it.
func (g *group) dropInvalidAddressesLocked(why string) bool {
	dropped := false
	for _, m := range append([]*member(nil), g.order...) {
		err := registry.ValidateGroupAddress(g.spec, m.rec.Address)
		if err == nil {
			continue
		}
		g.removeMemberLocked(m)
		g.b.forgetToken(m)
		g.deleteReplicaLocked(m.rec.ID)
		g.b.log.Warn("replica address is not valid for the group's protocol; replica removed", "group", g.name,
			"replica", m.rec.ID, "address", m.rec.Address, "protocol", g.spec.Protocol, "reason", why, "err", err)
		dropped = true
	}
	return dropped
}
