package balancer

import (
	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// The store unreachable (etcd down or cut off). The balancer goes on
// serving from memory: front doors keep their snapshots, reports are
// answered, GETs read memory. Admin writes (groups, registrations,
// drains, activations, removals, blocks) need the store: while it is
// known to be unreachable (store.Reachability), each is refused before it
// changes anything in memory, with an error wrapping
// store.ErrUnavailable; one that fails in the store (etcd lost between
// the check and the write, within the store's request timeout) is undone
// in memory, so that the instance never holds a change the store may not
// have. A write whose answer was lost may still have been committed by
// etcd: then the watch brings it back when etcd answers again, as any
// other instance's change. Deleting a group is the exception: its front
// door is stopped before its records are deleted (writes.go keeps later
// writes out), so a deletion that fails in the store makes the follower
// load the store again (resync), which brings the group back if its
// record is still there. Every write that fails in the store (but a
// refused condition) asks for that reload, so that background writes the
// balancer does not undo (a removed replica deleted once idle) are
// reconciled too once the store answers.

// StoreUnreachable returns nil while the store is reachable (always, for a
// store that cannot be unreachable, as bbolt), and otherwise an error
// wrapping store.ErrUnavailable that names the store and its endpoints.
func (b *Balancer) StoreUnreachable() error {
	if r, ok := b.opts.Store.(store.Reachability); ok {
		return r.Unreachable()
	}
	return nil
}

// undoAdminLocked gives m back the administrative verdict it had before
// an operator's change (prev, from g.core.Lifecycle) that could not be
// stored. Caller holds g.mu.
func (g *group) undoAdminLocked(m *member, prev groupcore.Lifecycle) {
	if g.members[m.rec.ID] != m {
		return
	}
	life, changed := g.core.RestoreAdmin(m.rec.ID, prev)
	if !changed {
		return
	}
	m.rec.Draining, m.rec.Removing = life.Draining(), life.Removing()
	g.membershipChangedLocked()
	g.emitLocked("membership", g.membersEventLocked())
}

// storeAdminChangeLocked stores an operator's change of m (write, queued;
// nil: nothing to store) made in memory from prev, and undoes it there
// when the store refuses it. No removal finishes meanwhile (g.saving).
// Caller holds g.mu, which is released on return.
func (g *group) storeAdminChangeLocked(m *member, prev groupcore.Lifecycle, write *storeWrite) error {
	g.saving++
	g.mu.Unlock()
	g.flushWrites()
	err := writeErr(write)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.saving--
	if err != nil {
		g.undoAdminLocked(m, prev)
	}
	return err
}
