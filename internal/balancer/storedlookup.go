package balancer

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Records unknown here. An instance that follows the store (a cluster on
// etcd) learns of another instance's writes through its watch, a moment
// after they are made; a client that creates a group or registers a
// replica at one instance and then calls another must not be told the
// group or replica does not exist because the watch has not brought it
// yet. So before an API call answers "unknown group" or "unknown
// replica", it reads the record from the store (a linearizable read) and,
// when it is there, applies it as the watch would and goes on. The read
// runs under followMu, like the watch's own changes, so that it cannot
// bring back a record the watch deleted between the read and the apply.
// A name that is not a valid group name is not looked up.

// storedGroup returns group name after reading it from the store, or nil
// when it is not stored (or the balancer does not follow the store, or
// the store cannot be read). Caller holds neither b.adminMu nor
// b.reloadMu.
func (b *Balancer) storedGroup(name string) *group {
	if !b.opts.Follow || !registry.ValidName(name) || b.StoreUnreachable() != nil {
		return nil
	}
	b.followMu.Lock()
	defer b.followMu.Unlock()
	if g, err := b.localGroup(name); err == nil {
		return g // the watch brought it meanwhile
	}
	ctx, cancel := context.WithTimeout(b.ctx, storedLookupTimeout)
	defer cancel()
	kv, err := b.opts.Store.Get(ctx, groupstore.GroupKey(name))
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			b.log.Warn("cannot look a group unknown here up in the store", "group", name, "err", err)
		}
		return nil
	}
	var gs protocol.Group
	if err := json.Unmarshal(kv.Value, &gs); err != nil || gs.Name != name {
		b.log.Warn("store key cannot be decoded; skipped", "key", kv.Key, "err", err)
		return nil
	}
	b.followGroup(gs, kv.ModRev)
	g, _ := b.localGroup(name)
	return g
}

// storedMember returns replica id of group g after reading it from the
// store, or nil when it is not stored (or the balancer does not follow
// the store, or the store cannot be read). Caller holds no lock.
func (b *Balancer) storedMember(g *group, id string) *member {
	if !b.opts.Follow || b.StoreUnreachable() != nil {
		return nil
	}
	b.followMu.Lock()
	defer b.followMu.Unlock()
	g.mu.Lock()
	m := g.members[id]
	g.mu.Unlock()
	if m != nil {
		return m // the watch brought it meanwhile
	}
	ctx, cancel := context.WithTimeout(b.ctx, storedLookupTimeout)
	defer cancel()
	kv, err := b.opts.Store.Get(ctx, groupstore.ReplicaKey(g.name, id))
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			b.log.Warn("cannot look a replica unknown here up in the store", "group", g.name, "replica", id, "err", err)
		}
		return nil
	}
	var rec protocol.Replica
	if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.Group != g.name || rec.ID != id {
		b.log.Warn("store key cannot be decoded; skipped", "key", kv.Key, "err", err)
		return nil
	}
	b.followReplica(rec)
	g.mu.Lock()
	m = g.members[id]
	g.mu.Unlock()
	return m
}
