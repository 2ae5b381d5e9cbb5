package balancer

import (
	"net"
	"sort"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Cluster mode (several instances on one etcd). The balancer knows the
// other live instances through Options.Peers (the instance directory,
// wired by the command) and tells the directory where its own front doors
// are through Options.OnFrontDoors and FrontDoors:
//
//   - a replica address that is another instance's listener (its admin
//     API or a bound front door) is refused (*LoopError naming the
//     instance), as one of this balancer's own is;
//   - a GIOP group whose advertise is derived from its front door (not
//     set explicitly) has an IOR listing this instance's front door first
//     and every other instance's bound front door of the group as
//     TAG_ALTERNATE_IIOP_ADDRESS components, read at every status;
//   - with Options.SharedConfig, a group the config file declares listens
//     on the file's front_door on this instance, whatever the stored
//     group's front_door (which stays as created), and a stored group the
//     file does not declare that cannot listen here is kept, not ready,
//     its error in FrontDoors.

// Peer is another live instance of the cluster, as the balancer uses it.
type Peer struct {
	// Name is the instance's name.
	Name string
	// AdminAddr is its admin API's host:port (from its admin URL).
	AdminAddr string
	// FrontDoors are its bound front doors by group, as another host
	// reaches them (a wildcard host replaced by its admin URL's host).
	FrontDoors map[string]string
}

// frontDoorsChanged calls Options.OnFrontDoors. It may be called with
// the balancer's and a group's locks held.
func (b *Balancer) frontDoorsChanged() {
	if b.opts.OnFrontDoors != nil {
		b.opts.OnFrontDoors()
	}
}

// FrontDoors returns every started group's front door on this instance:
// the address it listens on, or the error that keeps it from listening.
// Groups not started yet are left out.
func (b *Balancer) FrontDoors() map[string]protocol.FrontDoorBinding {
	b.mu.RLock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.RUnlock()
	out := make(map[string]protocol.FrontDoorBinding, len(groups))
	for _, g := range groups {
		g.mu.Lock()
		switch {
		case g.fdStopped != nil:
			out[g.name] = protocol.FrontDoorBinding{Error: g.fdStopped.Error()}
		case g.ln != nil:
			out[g.name] = protocol.FrontDoorBinding{Address: g.ln.Addr().String()}
		case g.bindErr != nil:
			out[g.name] = protocol.FrontDoorBinding{Error: g.bindErr.Error()}
		}
		g.mu.Unlock()
	}
	return out
}

// setLocalDoors records the front doors this instance's config file
// declares, by group (Options.SharedConfig).
func (b *Balancer) setLocalDoors(doors map[string]string) {
	b.localMu.Lock()
	b.localDoors = doors
	b.localMu.Unlock()
}

// localDoor is the front door this instance's config file declares for
// group name; "" when none (or without Options.SharedConfig).
func (b *Balancer) localDoor(name string) string {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	return b.localDoors[name]
}

// frontDoorLocked is where the group's front door listens on this
// instance: the config file's front_door for a group it declares (with
// Options.SharedConfig), else the group's own. Caller holds g.mu.
func (g *group) frontDoorLocked() string {
	if fd := g.b.localDoor(g.name); fd != "" {
		return fd
	}
	return g.spec.FrontDoor
}

// frontDoorFor is where the group's front door would listen with
// settings gs.
func (g *group) frontDoorFor(gs protocol.Group) string {
	if fd := g.b.localDoor(g.name); fd != "" {
		return fd
	}
	return gs.FrontDoor
}

// relocate moves a running front door to frontDoorLocked when it listens
// elsewhere (a reload changed the file's front_door, or the file no
// longer declares the group): calls in flight on the old listener finish.
func (g *group) relocate() error {
	g.mu.Lock()
	if !g.running || g.ln == nil || g.frontDoorLocked() == g.listenOn {
		g.mu.Unlock()
		return nil
	}
	old, oldLn, oldDoor, oldAddr := g.fd, g.ln, g.door, g.listenOn
	if err := g.startFrontDoorLocked(); err != nil {
		g.fd, g.ln, g.door, g.listenOn = old, oldLn, oldDoor, oldAddr
		g.mu.Unlock()
		return err
	}
	_ = oldDoor.Close()
	spec := g.spec
	g.publishLocked()
	g.mu.Unlock()
	retire(old, spec)
	return nil
}

// relocateAll relocates every group whose front door listens elsewhere
// than frontDoorLocked says; failures are logged and returned.
func (b *Balancer) relocateAll() []error {
	b.mu.RLock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.RUnlock()
	var errs []error
	for _, g := range groups {
		if err := g.relocate(); err != nil {
			b.log.Error("front door cannot move to the address the config file declares", "group", g.name, "err", err)
			errs = append(errs, err)
		}
	}
	return errs
}

// peers are the other live instances (Options.Peers).
func (b *Balancer) peers() []Peer {
	if b.opts.Peers == nil {
		return nil
	}
	return b.opts.Peers()
}

// checkPeerLoop refuses a replica address of a group of protocol proto
// that leads to another instance's admin API or front door. The other
// instances' machines are not this one: only their addresses match.
func (b *Balancer) checkPeerLoop(field, proto, addr string) error {
	for _, p := range b.peers() {
		var ls []registry.Listener
		if p.AdminAddr != "" {
			ls = append(ls, registry.Listener{Name: "admin API", Addr: p.AdminAddr})
		}
		groups := make([]string, 0, len(p.FrontDoors))
		for g := range p.FrontDoors {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, g := range groups {
			ls = append(ls, registry.Listener{Name: frontDoorName(g), Addr: p.FrontDoors[g]})
		}
		if l, ok := registry.LoopTarget(proto, addr, ls, registry.Local{}); ok {
			return &LoopError{Field: field, Address: addr, Target: l, Instance: p.Name}
		}
	}
	return nil
}

// checkReplicaLoops is checkReplicaLoop, and checkPeerLoop.
func (b *Balancer) checkReplicaLoops(field, proto, addr string, ls []registry.Listener, local registry.Local) error {
	if err := checkReplicaLoop(field, proto, addr, ls, local); err != nil {
		return err
	}
	return b.checkPeerLoop(field, proto, addr)
}

// peerDoorsLocked are the other instances' bound front doors of the group,
// as IIOP addresses of version v, sorted by instance name. Caller holds
// g.mu.
func (g *group) peerDoorsLocked(v ior.Version) []ior.Address {
	var out []ior.Address
	for _, p := range g.b.peers() {
		hp, ok := p.FrontDoors[g.name]
		if !ok {
			continue
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			continue
		}
		out = append(out, ior.Address{Version: v, Host: host, Port: uint16(n)})
	}
	return out
}
