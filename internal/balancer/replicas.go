package balancer

import (
	"fmt"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Register adds a replica to a group and returns its id and a fresh token.
// An address already in the group is a *DuplicateAddressError unless
// reg.Replace is set: then the existing replica keeps its id, gets a fresh
// token and the old one is revoked (created is false).
func (b *Balancer) Register(groupName string, reg protocol.Registration) (protocol.Registered, bool, error) {
	return b.RegisterWithJoinToken(groupName, reg, "")
}

// RegisterWithJoinToken is Register by a caller that presented joinToken
// (a join token of the group; "" for the admin token or none): the
// replica remembers it, so that the same join token, and no other, may
// remove it later (JoinMayRemove). A replace is a registration too: it
// makes the replica the replacing join token's (or, by the admin token,
// no join token's). A join token may not replace a registration another
// join token made (ErrNotRegistrar); it may replace one made with the
// admin token or declared in the config, which is how the monitor of a
// static replica gets its token.
func (b *Balancer) RegisterWithJoinToken(groupName string, reg protocol.Registration, joinToken string) (protocol.Registered, bool, error) {
	g, err := b.group(groupName)
	if err != nil {
		return protocol.Registered{}, false, err
	}
	if reg.Weight == 0 {
		reg.Weight = 1
	}
	g.mu.Lock()
	proto := g.spec.Protocol
	g.mu.Unlock()
	if err := registry.ValidateAddress(proto, reg.Address); err != nil {
		return protocol.Registered{}, false, &protocol.FieldError{Field: "address", Value: reg.Address, Allowed: err.Error()}
	}
	if err := checkReplicaLoop("address", proto, reg.Address, b.listeners("", ""), b.local()); err != nil {
		return protocol.Registered{}, false, err
	}
	if err := registry.ValidateWeight(reg.Weight); err != nil {
		return protocol.Registered{}, false, &protocol.FieldError{Field: "weight", Value: reg.Weight, Allowed: err.Error()}
	}
	if err := registry.ValidateMonitor(reg.Monitor); err != nil {
		return protocol.Registered{}, false, err
	}
	token, hash := registry.NewToken()

	g.mu.Lock()
	var existing *member
	for _, m := range g.order {
		if registry.NormalizeAddress(m.rec.Address) == registry.NormalizeAddress(reg.Address) {
			existing = m
			break
		}
	}
	if existing != nil && !reg.Replace {
		g.mu.Unlock()
		return protocol.Registered{}, false, &DuplicateAddressError{Group: groupName, Address: reg.Address, ExistingID: existing.rec.ID}
	}
	joinHash := ""
	if joinToken != "" {
		joinHash = registry.HashToken(joinToken)
		if existing != nil && existing.rec.JoinTokenHash != "" && !registry.TokenMatches(joinToken, existing.rec.JoinTokenHash) {
			g.mu.Unlock()
			return protocol.Registered{}, false, fmt.Errorf("%w: replica %s at %s was registered with another join token", ErrNotRegistrar, existing.rec.ID, reg.Address)
		}
	}
	created := existing == nil
	var rec protocol.Replica
	if existing != nil {
		rec = existing.rec
		rec.Weight, rec.Monitor = reg.Weight, reg.Monitor
		rec.Draining, rec.Removing = false, false
	} else {
		rec = protocol.Replica{ID: g.freshIDLocked(), Group: groupName, Address: reg.Address, Weight: reg.Weight, Monitor: reg.Monitor, Created: b.now().UTC()}
	}
	rec.JoinTokenHash = joinHash // an admin's replace takes the replica over
	oldHash := rec.TokenHash
	rec.TokenHash = hash
	if err := b.reg.PutReplica(rec); err != nil {
		g.mu.Unlock()
		return protocol.Registered{}, false, err
	}
	var m *member
	if existing != nil {
		m = existing
		m.rec = rec
		m.removing = false
		g.parseAddressLocked(m)
	} else {
		m = g.addMemberLocked(rec)
	}
	if m.pullStop != nil && m.rec.Monitor.Mode != protocol.MonitorPull {
		close(m.pullStop) // re-registered in push mode
		m.pullStop = nil
	}
	if g.running {
		g.startPullLocked(m)
	}
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	out := protocol.Registered{
		ID:             rec.ID,
		Token:          token,
		FrontDoor:      g.frontDoorURLLocked(),
		ReportURL:      strings.TrimRight(b.opts.AdminURL, "/") + "/v1/report",
		ReportInterval: g.spec.ReportInterval,
	}
	g.mu.Unlock()

	b.mu.Lock()
	if oldHash != "" {
		delete(b.tokens, oldHash)
	}
	b.tokens[hash] = m
	b.mu.Unlock()
	b.log.Info("replica registered", "group", groupName, "replica", rec.ID, "address", rec.Address, "replaced", !created)
	return out, created, nil
}

// freshIDLocked returns a replica id not used in the group.
func (g *group) freshIDLocked() string {
	for {
		id := registry.NewReplicaID()
		if g.members[id] == nil {
			return id
		}
	}
}

func (b *Balancer) member(groupName, id string) (*group, *member, error) {
	g, err := b.group(groupName)
	if err != nil {
		return nil, nil, err
	}
	g.mu.Lock()
	m := g.members[id]
	g.mu.Unlock()
	if m == nil {
		return nil, nil, fmt.Errorf("%w %q in group %s", ErrUnknownReplica, id, groupName)
	}
	return g, m, nil
}

// Drain stops new bindings to a replica; its bound clients are sent back on
// their next call (drain advisory).
func (b *Balancer) Drain(groupName, id string) error { return b.setDraining(groupName, id, true) }

// Activate undoes Drain.
func (b *Balancer) Activate(groupName, id string) error { return b.setDraining(groupName, id, false) }

func (b *Balancer) setDraining(groupName, id string, draining bool) error {
	g, m, err := b.member(groupName, id)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	rec := m.rec
	rec.Draining = draining
	if !draining {
		rec.Removing = false
	}
	if err := b.reg.PutReplica(rec); err != nil {
		return err
	}
	m.rec = rec
	if !draining {
		m.removing = false
	}
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	b.log.Info("replica state changed", "group", groupName, "replica", id, "state", m.stateLocked())
	return nil
}

// RemoveReplica drains a replica and removes it once it is idle (or after
// the drain timeout). The token stays valid until then so the monitor can
// still learn that it must drain.
func (b *Balancer) RemoveReplica(groupName, id string) error {
	g, m, err := b.member(groupName, id)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !m.removing {
		rec := m.rec
		rec.Removing = true
		if err := b.reg.PutReplica(rec); err != nil {
			return err
		}
		m.rec = rec
		m.removing = true
		m.drainFrom = b.now()
	}
	if m.rec.Static && g.fromConfig.Load() {
		b.log.Warn("removing a replica declared in the config file; it comes back at the next start", "group", groupName, "replica", id)
	}
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	return nil
}

// syncStaticLocked makes the group's static members match spec.Replicas:
// missing ones are added (persisted with a fresh id and an unused token),
// ones no longer declared are removed, weights and monitors updated.
func (g *group) syncStaticLocked() error {
	b := g.b
	want := map[string]protocol.StaticReplica{}
	for _, r := range g.spec.Replicas {
		want[registry.NormalizeAddress(r.Address)] = r
	}
	changed := false
	for _, m := range append([]*member(nil), g.order...) {
		key := registry.NormalizeAddress(m.rec.Address)
		sr, declared := want[key]
		switch {
		case declared:
			delete(want, key)
			if !m.rec.Static || m.rec.Weight != sr.Weight || m.rec.Monitor != sr.Monitor {
				m.rec.Static, m.rec.Weight, m.rec.Monitor = true, sr.Weight, sr.Monitor
				if err := b.reg.PutReplica(m.rec); err != nil {
					return err
				}
				changed = true
			}
		case m.rec.Static:
			g.removeMemberLocked(m)
			b.forgetToken(m)
			if err := b.reg.DeleteReplica(g.name, m.rec.ID); err != nil {
				return err
			}
			changed = true
		}
	}
	for _, sr := range g.spec.Replicas {
		if _, missing := want[registry.NormalizeAddress(sr.Address)]; !missing {
			continue
		}
		_, hash := registry.NewToken()
		rec := protocol.Replica{ID: g.freshIDLocked(), Group: g.name, Address: sr.Address, Weight: sr.Weight, Monitor: sr.Monitor, Static: true, TokenHash: hash, Created: b.now().UTC()}
		if err := b.reg.PutReplica(rec); err != nil {
			return err
		}
		m := g.addMemberLocked(rec)
		b.mu.Lock()
		b.tokens[hash] = m
		b.mu.Unlock()
		if g.running {
			g.startPullLocked(m)
		}
		changed = true
	}
	if changed {
		g.membershipChangedLocked()
	}
	return nil
}
