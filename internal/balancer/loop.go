package balancer

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// LoopError refuses a replica address that would connect to the balancer
// itself: its own front door (a proxy loop that multiplies every call
// until descriptors run out), another group's front door, or the admin
// API (which a front door would then expose to its clients). The admin
// API answers it with 400.
type LoopError struct {
	// Field is the request field at fault: "address", "replicas[2].address"
	// or "front_door".
	Field string
	// Address is the replica's address.
	Address string
	// Target is what listens where the address leads.
	Target registry.Listener
	// Replica and Group name the registered replica a new front door
	// would make loop (Field "front_door"); empty otherwise.
	Replica, Group string
	// Instance, when set, is the other instance of the cluster whose
	// listener Target is (cluster.go).
	Instance string
}

func (e *LoopError) Error() string {
	if e.Field == "front_door" {
		return fmt.Sprintf("balancer: front_door: %s is where replica %s of group %q points (%s); a front door there would make it loop back into the balancer: move the front door or remove the replica first",
			e.Target.Addr, e.Replica, e.Group, e.Address)
	}
	if e.Instance != "" {
		return fmt.Sprintf("balancer: %s: replica address %s is the %s of instance %q of this cluster (listening on %s); a replica there would loop back into the balancer",
			e.Field, e.Address, e.Target.Name, e.Instance, e.Target.Addr)
	}
	return fmt.Sprintf("balancer: %s: replica address %s is the %s of this balancer (listening on %s); a replica there would loop back into the balancer",
		e.Field, e.Address, e.Target.Name, e.Target.Addr)
}

// Allowed says what the field accepts, for the API's "allowed".
func (e *LoopError) Allowed() string {
	if e.Field == "front_door" {
		return "must not be an address a registered replica points at"
	}
	if e.Instance != "" {
		return "must not be an address an instance of this cluster listens on (a front door or the admin API)"
	}
	return "must not be an address this balancer listens on (a front door or the admin API)"
}

// localMachine is what the machine answers to: its interface addresses
// and host name. An error leaves those out; loopback addresses and
// localhost are local regardless.
func localMachine() registry.Local {
	var l registry.Local
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				l.Addrs = append(l.Addrs, p.Addr())
			}
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		l.Names = append(l.Names, h)
		if short, _, ok := strings.Cut(h, "."); ok {
			l.Names = append(l.Names, short)
		}
	}
	return l
}

// frontDoorName is how errors name a group's front door.
func frontDoorName(group string) string { return fmt.Sprintf("front door of group %q", group) }

// listeners are the addresses the balancer listens on: the admin API and
// every group's front door, as bound (or as configured while not bound).
// pending, when not empty, is a group whose front door is about to be
// frontDoor instead.
func (b *Balancer) listeners(pending, frontDoor string) []registry.Listener {
	var out []registry.Listener
	if b.opts.AdminAddr != "" {
		out = append(out, registry.Listener{Name: "admin API", Addr: b.opts.AdminAddr})
	}
	b.mu.RLock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.RUnlock()
	seen := false
	for _, g := range groups {
		g.mu.Lock()
		addr := g.frontDoorLocked()
		if g.ln != nil && g.listenOn == addr {
			addr = g.ln.Addr().String()
		}
		if g.name == pending {
			seen = true
			if frontDoor != g.listenOn || g.ln == nil {
				addr = frontDoor
			}
		}
		g.mu.Unlock()
		out = append(out, registry.Listener{Name: frontDoorName(g.name), Addr: addr})
	}
	if pending != "" && !seen {
		out = append(out, registry.Listener{Name: frontDoorName(pending), Addr: frontDoor})
	}
	return out
}

// checkReplicaLoop refuses a replica address of a group of protocol proto
// that leads to one of ls.
func checkReplicaLoop(field, proto, addr string, ls []registry.Listener, local registry.Local) error {
	if l, ok := registry.LoopTarget(proto, addr, ls, local); ok {
		return &LoopError{Field: field, Address: addr, Target: l}
	}
	return nil
}

// checkGroupLoops refuses settings gs of a group that would make the
// balancer connect to itself: a static replica at one of its listeners
// (the group's new front door included), or, with registered, a new front
// door where a registered replica of any group points. gs is defaulted and
// validated. The config file is applied without registered: a stored
// replica must not keep the balancer from starting; Start removes it
// (dropLoopingReplicas).
func (b *Balancer) checkGroupLoops(gs protocol.Group, registered bool) error {
	local := b.local()
	ls := b.listeners(gs.Name, gs.FrontDoor)
	for i, r := range gs.Replicas {
		if err := b.checkReplicaLoops(fmt.Sprintf("replicas[%d].address", i), registry.AddressProtocol(gs), r.Address, ls, local); err != nil {
			return err
		}
	}
	if !registered {
		return nil
	}
	b.mu.RLock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.RUnlock()
	type replica struct{ group, proto, id, addr string }
	var rs []replica
	for _, g := range groups {
		g.mu.Lock()
		if g.name == gs.Name && g.ln != nil && g.listenOn == gs.FrontDoor {
			g.mu.Unlock()
			return nil // the front door stays where its replicas were checked
		}
		for _, m := range g.order {
			if g.name == gs.Name && m.rec.Static {
				continue // replaced by gs.Replicas, checked above
			}
			rs = append(rs, replica{g.name, registry.AddressProtocol(g.spec), m.rec.ID, m.rec.Address})
		}
		g.mu.Unlock()
	}
	door := []registry.Listener{{Name: frontDoorName(gs.Name), Addr: gs.FrontDoor}}
	for _, r := range rs {
		if l, ok := registry.LoopTarget(r.proto, r.addr, door, local); ok {
			return &LoopError{Field: "front_door", Address: r.addr, Target: l, Replica: r.id, Group: r.group}
		}
	}
	return nil
}

// local is the machine's addresses, through Options.Local.
func (b *Balancer) local() registry.Local {
	if b.opts.Local != nil {
		return b.opts.Local()
	}
	return localMachine()
}

// dropLoopingReplicas removes every replica whose address leads to one of
// the balancer's listeners as bound: one registered before such addresses
// were refused, or one at the port a front door on port 0 has just been
// given. Each removal is logged as an error.
func (b *Balancer) dropLoopingReplicas() {
	ls := b.listeners("", "")
	local := b.local()
	b.mu.RLock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.RUnlock()
	for _, g := range groups {
		g.mu.Lock()
		dropped := false
		for _, m := range append([]*member(nil), g.order...) {
			l, loops := registry.LoopTarget(registry.AddressProtocol(g.spec), m.rec.Address, ls, local)
			if !loops {
				continue
			}
			g.removeMemberLocked(m)
			b.forgetToken(m)
			g.deleteReplicaLocked(m.rec.ID) // written below; errors are logged
			b.log.Error("replica address leads back into the balancer; replica removed", "group", g.name, "replica", m.rec.ID,
				"address", m.rec.Address, "listener", l.Name, "listening", l.Addr)
			dropped = true
		}
		if dropped {
			g.membershipChangedLocked()
			g.emitLocked("membership", g.membersEventLocked())
		}
		g.mu.Unlock()
		g.flushWrites()
	}
}
