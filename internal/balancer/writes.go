package balancer

import (
	"errors"

	"github.com/fulcrum-lb/fulcrum/internal/groupstore"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Store writes. A group decides under its lock (mu) and writes to the
// store after releasing it, so that a slow disk never stalls its front
// door's snapshots, reports or steps. Writes are queued under mu, in the
// order of the in-memory changes they record, and written in that order
// by flushWrites (one flush at a time per group, under wmu): two changes
// racing to the store land there in the order they were made in memory,
// whichever caller flushes. Every call of the group's to the registry's
// write API is in (*group).write.

// storeWrite is one change to the store; exactly one field of the first
// seven is set.
type storeWrite struct {
	putReplica *protocol.Replica
	delReplica string // replica id
	putGroup   *protocol.Group
	delGroup   bool
	putBlock   *groupstore.Block
	delBlock   string // the block's Match
	putHealth  *groupstore.Health
	// fenced: the write is the leader's alone, made through its fence
	// (fenced.go).
	fenced bool
	// groupRev is the revision of the group's record a putGroup or
	// delGroup write is conditioned on (0: absent; revision.go); a
	// delGroup with a negative groupRev is not conditioned.
	groupRev int64
	// err is the write's outcome, set by the flush that writes it: read it
	// after the caller's own flushWrites has returned.
	err error
}

// queueWriteLocked queues w. Once the group's deletion is queued, later
// writes are dropped (a replica written after it would outlive its
// group). Caller holds g.mu.
func (g *group) queueWriteLocked(w *storeWrite) *storeWrite {
	if g.deleted {
		return w
	}
	g.deleted = w.delGroup
	g.pending = append(g.pending, w)
	return w
}

func (g *group) putReplicaLocked(rec protocol.Replica) *storeWrite {
	return g.queueWriteLocked(&storeWrite{putReplica: &rec})
}

func (g *group) deleteReplicaLocked(id string) *storeWrite {
	return g.queueWriteLocked(&storeWrite{delReplica: id})
}

// flushWrites writes every queued write, in order. When it returns, every
// write queued before the call has been written (by it or by another
// flush) and has its err set. Caller must not hold g.mu.
func (g *group) flushWrites() {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	g.mu.Lock()
	ws := g.pending
	g.pending = nil
	g.mu.Unlock()
	for _, w := range ws {
		w.err = g.write(w)
		switch {
		case w.err == nil:
		case w.fenced && deposed(w.err):
			g.refusedFenced(w) // fenced.go
		default:
			g.b.log.Error("cannot write to the store", "group", g.name, "err", w.err)
			if !errors.Is(w.err, groupstore.ErrConflict) {
				// Whether it applied is unknown, and a background write
				// (a removal once idle) is not undone: load the store
				// again once it answers (degraded.go).
				g.b.askResync()
			}
		}
	}
}

// write makes one write through the registry.
func (g *group) write(w *storeWrite) error {
	reg := g.b.reg
	if w.fenced {
		r, err := g.fencedRecords()
		if err != nil {
			return err
		}
		reg = r
	}
	switch {
	case w.putReplica != nil:
		return reg.PutReplica(*w.putReplica)
	case w.delReplica != "":
		return reg.DeleteReplica(g.name, w.delReplica)
	case w.putGroup != nil:
		rev, err := reg.PutGroupAt(*w.putGroup, w.groupRev)
		if err == nil {
			g.mu.Lock()
			g.rev = rev
			g.mu.Unlock()
		}
		return err
	case w.delGroup && w.groupRev < 0:
		return reg.DeleteGroup(g.name)
	case w.delGroup:
		return reg.DeleteGroupAt(g.name, w.groupRev)
	case w.putBlock != nil:
		return reg.PutBlock(*w.putBlock)
	case w.delBlock != "":
		return reg.DeleteBlock(g.name, w.delBlock)
	case w.putHealth != nil:
		return reg.PutHealth(*w.putHealth)
	}
	return nil
}

// writeErr joins the errors of ws (call after flushWrites).
func writeErr(ws ...*storeWrite) error {
	var errs []error
	for _, w := range ws {
		if w != nil && w.err != nil {
			errs = append(errs, w.err)
		}
	}
	return errors.Join(errs...)
}
