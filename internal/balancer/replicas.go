package balancer

import (
	"fmt"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Register adds a replica to a group and returns its id and a fresh token.
// An address already in the group is a *DuplicateAddressError unless
// reg.Replace is set: then the existing replica keeps its id, gets a fresh
// token and the old one is revoked (created is false). A registration
// with reg.Worker joins the multi-process replica of its address or is a
// *WorkerConflictError (workerreg.go).
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
	spec := g.spec
	g.mu.Unlock()
	proto := registry.AddressProtocol(spec)
	if err := registry.ValidateGroupAddress(spec, reg.Address); err != nil {
		return protocol.Registered{}, false, &protocol.FieldError{Field: "address", Value: reg.Address, Allowed: err.Error()}
	}
	if err := b.checkReplicaLoops("address", proto, reg.Address, b.listeners("", ""), b.local()); err != nil {
		return protocol.Registered{}, false, err
	}
	if err := registry.ValidateWeight(reg.Weight); err != nil {
		return protocol.Registered{}, false, &protocol.FieldError{Field: "weight", Value: reg.Weight, Allowed: err.Error()}
	}
	if err := registry.ValidateMonitor(reg.Monitor); err != nil {
		return protocol.Registered{}, false, err
	}
	if err := validateWorkerRegistration(reg); err != nil {
		return protocol.Registered{}, false, err // workerreg.go
	}
	if err := b.StoreUnreachable(); err != nil {
		return protocol.Registered{}, false, err // degraded.go
	}
	token, hash := registry.NewToken()

	g.mu.Lock()
	if g.blockedLocked(reg.Address) {
		g.mu.Unlock()
		return protocol.Registered{}, false, &BlockedError{Group: groupName, Address: reg.Address}
	}
	var existing *member
	for _, m := range g.order {
		if registry.NormalizeAddress(m.rec.Address) == registry.NormalizeAddress(reg.Address) {
			existing = m
			break
		}
	}
	join := false
	if existing != nil {
		var err error
		if join, err = joinsWorkers(groupName, existing.rec, reg); err != nil { // workerreg.go
			g.mu.Unlock()
			return protocol.Registered{}, false, err
		}
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
	var m *member
	switch {
	case join:
		// A sibling worker joins: same id and token, nothing else changes.
		m = existing
		var fresh bool
		if token, hash, fresh = m.joinTokenLocked(); !fresh {
			out := g.registeredLocked(m.rec.ID, token)
			g.mu.Unlock()
			b.log.Info("replica worker joined", "group", groupName, "replica", m.rec.ID, "address", m.rec.Address, "worker", reg.Worker.Index, "workers", reg.Worker.Count)
			return out, false, nil
		}
		joinHash = m.rec.JoinTokenHash
	case existing != nil:
		m = existing
		m.rec.Weight, m.rec.Monitor, m.rec.Workers = reg.Weight, reg.Monitor, workerCount(reg)
		m.workers = nil // the workers of another count, or none (workerreport.go)
		g.applyLocked(m, groupcore.Activate)
		g.core.SetWeight(m.rec.ID, reg.Weight)
		g.parseAddressLocked(m)
	default:
		rec := protocol.Replica{ID: g.freshIDLocked(), Group: groupName, Address: reg.Address, Weight: reg.Weight, Monitor: reg.Monitor, Workers: workerCount(reg), Created: b.now().UTC()}
		m = g.addMemberLocked(rec, groupcore.Lifecycle{})
	}
	oldHash, oldJoin, oldToken := m.rec.TokenHash, m.rec.JoinTokenHash, m.token
	m.rec.JoinTokenHash = joinHash // an admin's replace takes the replica over
	m.rec.TokenHash = hash
	m.token = ""
	if m.rec.Workers > 0 {
		m.token = token // for the siblings that join (workerreg.go)
	}
	rec := m.rec
	write := g.putReplicaLocked(rec)
	if m.pullStop != nil && m.rec.Monitor.Mode != protocol.MonitorPull {
		close(m.pullStop) // re-registered in push mode
		m.pullStop = nil
	}
	if g.running {
		g.startPullLocked(m)
	}
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	out := g.registeredLocked(rec.ID, token)
	g.mu.Unlock()
	g.flushWrites()
	if err := writeErr(write); err != nil {
		g.undoRegister(m, created, oldHash, oldJoin, oldToken)
		return protocol.Registered{}, false, err
	}

	b.mu.Lock()
	if oldHash != "" {
		delete(b.tokens, oldHash)
	}
	b.tokens[hash] = m
	b.mu.Unlock()
	b.log.Info("replica registered", "group", groupName, "replica", rec.ID, "address", rec.Address, "replaced", !created)
	return out, created, nil
}

// registeredLocked is the answer to a registration of replica id with
// token. Caller holds g.mu.
func (g *group) registeredLocked(id, token string) protocol.Registered {
	return protocol.Registered{
		ID:             id,
		Token:          token,
		FrontDoor:      g.frontDoorURLLocked(),
		ReportURL:      strings.TrimRight(*g.b.adminURL.Load(), "/") + "/v1/report",
		ReportInterval: g.spec.ReportInterval,
	}
}

// undoRegister undoes a registration whose record could not be written: a
// new member is dropped, a replaced one keeps its old tokens.
func (g *group) undoRegister(m *member, created bool, oldHash, oldJoin, oldToken string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.members[m.rec.ID] != m {
		return
	}
	if !created {
		m.rec.TokenHash, m.rec.JoinTokenHash, m.token = oldHash, oldJoin, oldToken
		return
	}
	g.removeMemberLocked(m)
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
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
		m = b.storedMember(g, id) // registered at another instance a moment ago? (storedlookup.go)
	}
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

// setDraining applies Drain or Activate. The record is written after the
// group lock is released; a write that fails is returned, and the change
// is undone in memory (degraded.go).
func (b *Balancer) setDraining(groupName, id string, draining bool) error {
	g, m, err := b.member(groupName, id)
	if err != nil {
		return err
	}
	if err := b.StoreUnreachable(); err != nil {
		return err
	}
	ev := groupcore.Activate
	if draining {
		ev = groupcore.Drain
	}
	g.mu.Lock()
	if g.members[id] != m { // removed meanwhile: its record must stay deleted
		g.mu.Unlock()
		return fmt.Errorf("%w %q in group %s", ErrUnknownReplica, id, groupName)
	}
	prev, _ := g.core.Lifecycle(id)
	g.applyLocked(m, ev)
	write := g.putReplicaLocked(m.rec)
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	state := g.stateLocked(m)
	if err := g.storeAdminChangeLocked(m, prev, write); err != nil {
		return err
	}
	b.log.Info("replica state changed", "group", groupName, "replica", id, "state", state)
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
	if err := b.StoreUnreachable(); err != nil {
		return err
	}
	g.mu.Lock()
	if g.members[id] != m { // removed meanwhile
		g.mu.Unlock()
		return fmt.Errorf("%w %q in group %s", ErrUnknownReplica, id, groupName)
	}
	prev, _ := g.core.Lifecycle(id)
	var write *storeWrite
	if g.applyLocked(m, groupcore.Remove) {
		write = g.putReplicaLocked(m.rec)
	}
	if m.rec.Static && g.fromConfig.Load() && !b.opts.SharedConfig {
		b.log.Warn("removing a replica declared in the config file; it comes back at the next start", "group", groupName, "replica", id)
	}
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	return g.storeAdminChangeLocked(m, prev, write)
}

// syncStaticLocked makes the group's static members match spec.Replicas:
// missing ones are added (persisted with a fresh id and an unused token),
// ones no longer declared are removed, weights and monitors updated. It
// returns the store writes it queued; the caller flushes them after
// releasing g.mu.
func (g *group) syncStaticLocked() []*storeWrite {
	var writes []*storeWrite
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
				g.core.SetWeight(m.rec.ID, sr.Weight)
				writes = append(writes, g.putReplicaLocked(m.rec))
				changed = true
			}
		case m.rec.Static:
			g.removeMemberLocked(m)
			b.forgetToken(m)
			writes = append(writes, g.deleteReplicaLocked(m.rec.ID))
			changed = true
		}
	}
	for _, sr := range g.spec.Replicas {
		if _, missing := want[registry.NormalizeAddress(sr.Address)]; !missing {
			continue
		}
		_, hash := registry.NewToken()
		rec := protocol.Replica{ID: g.freshIDLocked(), Group: g.name, Address: sr.Address, Weight: sr.Weight, Monitor: sr.Monitor, Static: true, TokenHash: hash, Created: b.now().UTC()}
		writes = append(writes, g.putReplicaLocked(rec))
		m := g.addMemberLocked(rec, groupcore.Lifecycle{})
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
	return writes
}
