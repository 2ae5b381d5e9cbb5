package balancer

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Following the store. With Options.Follow, the balancer watches every key
// of the store (store.Store.Watch) from the revision it loaded at New, and
// applies the changes other writers make (other instances on one etcd):
// groups created, changed and deleted, replicas registered, changed
// (weight, monitor, token, drained, removing) and deleted, blocks added and
// removed. Its own writes come back through the watch too, and change
// nothing: a record equal to the one in memory is skipped. After a
// compaction or a broken watch it loads the whole store again and
// reconciles (applying every stored record, and forgetting what is no
// longer stored). A key it cannot decode is logged and skipped.

// followRetry is the pause before watching again after a broken watch
// (the store being unreachable, say).
const followRetry = 500 * time.Millisecond

// follow runs until ctx ends, after Start (the groups it creates start at
// once). from is the revision the balancer's state was loaded at.
func (b *Balancer) follow(ctx context.Context, from int64, done chan<- struct{}) {
	defer close(done)
	for ctx.Err() == nil {
		wctx, wcancel := context.WithCancel(ctx)
		ch, err := b.opts.Store.Watch(wctx, "", from+1)
		if err != nil {
			wcancel()
			if ctx.Err() != nil {
				return
			}
			b.log.Warn("cannot watch the store; loading it again", "from_revision", from+1, "err", err)
			from = b.relist(ctx, from)
			continue
		}
		from = b.followWatch(ch, from)
		wcancel()
		if ctx.Err() != nil {
			return
		}
		// The watch ended (an error, or the store closed it): whatever
		// was missed is in a fresh load.
		from = b.relist(ctx, from)
	}
}

// followWatch applies the responses of ch until it ends with an error or
// closes, or a resync is asked for; it returns the last revision applied.
func (b *Balancer) followWatch(ch <-chan store.WatchResponse, from int64) int64 {
	for {
		select {
		case resp, ok := <-ch:
			if !ok {
				return from
			}
			if resp.Err != nil {
				b.log.Warn("watch of the store ended; loading it again", "err", resp.Err)
				return from
			}
			b.followMu.Lock()
			for _, ev := range resp.Events {
				b.applyEvent(ev)
			}
			b.followMu.Unlock()
			from = resp.Rev
		case <-b.resync:
			b.log.Info("loading the store again after a write whose outcome is unknown")
			return from
		}
	}
}

// askResync makes the follower (Options.Follow) load the store again and
// reconcile, as after a broken watch; without a follower it does nothing.
func (b *Balancer) askResync() {
	if !b.opts.Follow {
		return
	}
	select {
	case b.resync <- struct{}{}:
	default: // one is asked for already
	}
}

// relist loads the store and reconciles, retrying until it succeeds or
// ctx ends; it returns the revision loaded (from when ctx ended first).
func (b *Balancer) relist(ctx context.Context, from int64) int64 {
	for {
		snap, err := b.reg.LoadSkipping(func(key string, err error) {
			b.log.Warn("store key cannot be decoded; skipped", "key", key, "err", err)
		})
		if err == nil {
			b.reconcile(snap)
			return snap.Rev
		}
		b.log.Warn("cannot load the store; trying again", "err", err)
		t := b.clock.NewTicker(followRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return from
		case <-t.C():
			t.Stop()
		}
	}
}

// reconcile applies every record of snap and forgets the groups, replicas
// and blocks snap no longer holds (but a group this balancer wrote after
// snap was loaded). A replica or block written here after the load is
// forgotten too, and comes back with its own event from the watch that
// follows.
func (b *Balancer) reconcile(snap groupstore.Snapshot) {
	b.followMu.Lock()
	defer b.followMu.Unlock()
	groups := map[string]bool{}
	for _, gs := range snap.Groups {
		groups[gs.Name] = true
		b.followGroup(gs, snap.GroupRevs[gs.Name])
	}
	replicas := map[string]bool{}
	for _, rec := range snap.Replicas {
		replicas[rec.Group+"/"+rec.ID] = true
		b.followReplica(rec)
	}
	blocks := map[string]bool{}
	for _, blk := range snap.Blocks {
		blocks[groupstore.BlockKey(blk.Group, blk.Match)] = true
		b.followBlock(blk)
	}
	for _, h := range snap.Health {
		b.followHealth(h, true)
	}
	b.mu.RLock()
	var gone []string
	all := make([]*group, 0, len(b.groups))
	for name, g := range b.groups {
		if groups[name] {
			all = append(all, g)
			continue
		}
		g.mu.Lock()
		newer := g.rev > snap.Rev // written here after the load
		g.mu.Unlock()
		if !newer {
			gone = append(gone, name)
		}
	}
	b.mu.RUnlock()
	for _, name := range gone {
		b.followGroupDeleted(name)
	}
	for _, g := range all {
		g.mu.Lock()
		var ids []string
		for id := range g.members {
			if !replicas[g.name+"/"+id] {
				ids = append(ids, id)
			}
		}
		var matches []string
		for match := range g.blocks {
			if !blocks[groupstore.BlockKey(g.name, match)] {
				matches = append(matches, match)
			}
		}
		g.mu.Unlock()
		for _, id := range ids {
			b.followReplicaDeleted(g.name, id)
		}
		for _, match := range matches {
			b.followBlockDeleted(g.name, match)
		}
	}
}

// applyEvent applies one change of the store.
func (b *Balancer) applyEvent(ev store.Event) {
	key := ev.KV.Key
	put := ev.Type == store.EventPut
	switch {
	case strings.HasPrefix(key, groupstore.GroupsPrefix):
		name := strings.TrimPrefix(key, groupstore.GroupsPrefix)
		if !put {
			b.followGroupDeleted(name)
			return
		}
		var gs protocol.Group
		if err := json.Unmarshal(ev.KV.Value, &gs); err != nil || gs.Name != name {
			b.log.Warn("store key cannot be decoded; skipped", "key", key, "err", err)
			return
		}
		b.followGroup(gs, ev.KV.ModRev)
	case strings.HasPrefix(key, groupstore.ReplicasPrefix):
		group, id, ok := strings.Cut(strings.TrimPrefix(key, groupstore.ReplicasPrefix), "/")
		if !ok {
			b.log.Warn("store key cannot be decoded; skipped", "key", key)
			return
		}
		if !put {
			b.followReplicaDeleted(group, id)
			return
		}
		var rec protocol.Replica
		if err := json.Unmarshal(ev.KV.Value, &rec); err != nil || rec.Group != group || rec.ID != id {
			b.log.Warn("store key cannot be decoded; skipped", "key", key, "err", err)
			return
		}
		b.followReplica(rec)
	case strings.HasPrefix(key, groupstore.BlocksPrefix):
		if !put {
			group, _, ok := strings.Cut(strings.TrimPrefix(key, groupstore.BlocksPrefix), "/")
			if !ok {
				b.log.Warn("store key cannot be decoded; skipped", "key", key)
				return
			}
			b.followBlockKeyDeleted(group, key)
			return
		}
		var blk groupstore.Block
		if err := json.Unmarshal(ev.KV.Value, &blk); err != nil || groupstore.BlockKey(blk.Group, blk.Match) != key {
			b.log.Warn("store key cannot be decoded; skipped", "key", key, "err", err)
			return
		}
		b.followBlock(blk)
	case strings.HasPrefix(key, groupstore.HealthPrefix):
		group, id, ok := strings.Cut(strings.TrimPrefix(key, groupstore.HealthPrefix), "/")
		if !ok {
			b.log.Warn("store key cannot be decoded; skipped", "key", key)
			return
		}
		h := groupstore.Health{Group: group, ID: id}
		if put {
			if err := json.Unmarshal(ev.KV.Value, &h); err != nil || h.Group != group || h.ID != id {
				b.log.Warn("store key cannot be decoded; skipped", "key", key, "err", err)
				return
			}
		}
		b.followHealth(h, put) // leaderhealth.go
	}
}

// followGroup applies a stored group: created when unknown here (its front
// door started if the balancer runs), updated when its settings differ.
func (b *Balancer) followGroup(gs protocol.Group, rev int64) {
	gs = registry.WithDefaults(gs)
	if err := registry.Validate(gs); err != nil {
		b.log.Warn("stored group is invalid; skipped", "group", gs.Name, "err", err)
		return
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	b.mu.RLock()
	g, closed := b.groups[gs.Name], b.closed
	b.mu.RUnlock()
	if closed {
		return
	}
	if g != nil {
		g.mu.Lock()
		same := sameSettings(g.spec, gs) && g.spec.Source == gs.Source
		if rev > g.rev {
			g.rev = rev
		}
		g.mu.Unlock()
		if same {
			return
		}
		if err := g.update(gs); err != nil {
			b.log.Error("group changed in the store cannot be applied here", "group", gs.Name, "err", err)
			return
		}
		b.log.Info("group changed in the store", "group", gs.Name)
		return
	}
	g, err := b.newGroup(gs)
	if err != nil {
		b.log.Error("group created in the store cannot be built here", "group", gs.Name, "err", err)
		return
	}
	g.rev = rev
	b.mu.Lock()
	if b.closed || b.groups[gs.Name] != nil {
		b.mu.Unlock()
		b.discardNew(g)
		return
	}
	b.groups[gs.Name] = g
	b.mu.Unlock()
	b.groupEvent("group-created", gs.Name)
	if err := g.start(); err != nil {
		b.log.Error("group created in the store: its front door cannot listen here", "group", gs.Name, "front_door", gs.FrontDoor, "err", err)
	}
	b.log.Info("group created in the store", "group", gs.Name)
}

// followGroupDeleted forgets a group deleted from the store.
func (b *Balancer) followGroupDeleted(name string) {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	g := b.detachGroup(name)
	if g == nil {
		return
	}
	g.mu.Lock()
	g.deleted = true // nothing more of it is written
	g.mu.Unlock()
	b.log.Info("group deleted in the store", "group", name)
}

// followReplica applies a stored replica record.
func (b *Balancer) followReplica(rec protocol.Replica) {
	b.mu.RLock()
	g := b.groups[rec.Group]
	b.mu.RUnlock()
	if g == nil {
		return // its group is not (or no longer) here
	}
	g.mu.Lock()
	m := g.members[rec.ID]
	var oldHash string
	switch {
	case m == nil:
		m = g.addMemberLocked(rec, groupcore.Restored(rec.Draining, rec.Removing, b.now()))
		if g.running {
			g.startPullLocked(m)
		}
	case sameRecord(m.rec, rec):
		g.mu.Unlock()
		return
	default:
		oldHash = m.rec.TokenHash
		addrChanged := m.rec.Address != rec.Address
		m.rec.Weight, m.rec.Monitor, m.rec.TokenHash, m.rec.JoinTokenHash, m.rec.Address, m.rec.Static = rec.Weight, rec.Monitor, rec.TokenHash, rec.JoinTokenHash, rec.Address, rec.Static
		if m.rec.Workers != rec.Workers {
			m.rec.Workers, m.workers = rec.Workers, nil // workerreport.go
		}
		g.core.SetWeight(rec.ID, rec.Weight)
		if addrChanged {
			g.parseAddressLocked(m)
		}
		switch {
		case rec.Removing:
			g.applyLocked(m, groupcore.Remove)
		case rec.Draining:
			g.applyLocked(m, groupcore.Drain)
		default:
			g.applyLocked(m, groupcore.Activate)
		}
		if m.pullStop != nil && m.rec.Monitor.Mode != protocol.MonitorPull {
			close(m.pullStop)
			m.pullStop = nil
		}
		if g.running {
			g.startPullLocked(m)
		}
	}
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	g.mu.Unlock()
	b.mu.Lock()
	if oldHash != "" && oldHash != rec.TokenHash && b.tokens[oldHash] == m {
		delete(b.tokens, oldHash)
	}
	if rec.TokenHash != "" {
		b.tokens[rec.TokenHash] = m
	}
	b.mu.Unlock()
}

// sameRecord tells whether two records of one replica are equal.
func sameRecord(a, b protocol.Replica) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// followReplicaDeleted forgets a replica deleted from the store.
func (b *Balancer) followReplicaDeleted(group, id string) {
	b.mu.RLock()
	g := b.groups[group]
	b.mu.RUnlock()
	if g == nil {
		return
	}
	g.mu.Lock()
	m := g.members[id]
	if m == nil {
		g.mu.Unlock()
		return
	}
	g.removeMemberLocked(m)
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
	g.mu.Unlock()
	b.forgetToken(m)
}

// followBlock applies a stored block.
func (b *Balancer) followBlock(blk groupstore.Block) {
	b.mu.RLock()
	g := b.groups[blk.Group]
	b.mu.RUnlock()
	if g == nil {
		return
	}
	g.mu.Lock()
	g.restoreBlockLocked(blk)
	g.mu.Unlock()
}

// followBlockKeyDeleted forgets the block of group stored under key.
func (b *Balancer) followBlockKeyDeleted(group, key string) {
	b.mu.RLock()
	g := b.groups[group]
	b.mu.RUnlock()
	if g == nil {
		return
	}
	g.mu.Lock()
	for match := range g.blocks {
		if groupstore.BlockKey(group, match) == key {
			delete(g.blocks, match)
		}
	}
	g.mu.Unlock()
}

// followBlockDeleted forgets a block of group.
func (b *Balancer) followBlockDeleted(group, match string) {
	b.followBlockKeyDeleted(group, groupstore.BlockKey(group, match))
}
