package balancer

import (
	"context"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/moves"
)

// Planned moves in a cluster (Options.Moves; package moves). The group's
// leader commits the moves its step planned to etcd, through its fence,
// in the step itself — under the group's lock, so before any report can
// be answered with the advisory naming their clients — and deletes a
// move once its client has bound at its front door. Every instance's
// front door looks up in etcd the move of a rebinding client its snapshot
// does not name (frontdoor.Snapshot.LookupMove) and binds it there; the
// leader's analyzer completes the move when it was the leader's own
// front door; another instance tells the leader, with the term of the
// move it looked up (boundnotice.go), and the leader completes it and
// deletes its key (boundtake.go). A notice that is lost leaves the move
// pending in the leader's analyzer until it expires (MoveExpiryIntervals
// report intervals), and its key until its lease ends. A commit that
// fails is logged: the client then comes back to a front door that picks
// as usual.

// moveCommitTimeout bounds a step's commit of its new moves to etcd.
const moveCommitTimeout = time.Second

// commitMovesLocked commits the group's planned moves when this instance
// leads it. Caller holds g.mu; the etcd transaction is made under it only
// when the step planned moves not yet committed in the term.
func (g *group) commitMovesLocked(r role, now time.Time) {
	ms, l := g.b.opts.Moves, g.b.opts.Leadership
	if ms == nil || l == nil || !r.lead {
		return
	}
	f, ok := l.Fence(g.name)
	if !ok {
		return
	}
	epochs := make(map[string]uint64, len(g.lastStep.Replicas))
	for _, v := range g.lastStep.Replicas {
		epochs[v.ID] = v.Advisory.Epoch
	}
	planned := make([]moves.Move, 0, len(g.lastStep.Planned))
	for _, mv := range g.lastStep.Planned {
		planned = append(planned, moves.Move{Client: mv.Client, To: mv.To, Epoch: epochs[mv.From], PlannedAt: now})
	}
	ctx, cancel := context.WithTimeout(g.b.ctx, min(moveCommitTimeout, g.spec.ReportInterval.D()))
	defer cancel()
	life := analyzer.MoveExpiryIntervals * g.spec.ReportInterval.D()
	if err := ms.Commit(ctx, f, g.name, life, planned); err != nil {
		if deposed(err) {
			g.b.log.Warn("not the group's leader any more: its moves were not committed", "group", g.name, "err", err)
			return
		}
		g.b.log.Error("cannot commit the planned moves to etcd", "group", g.name, "err", err)
	}
}

// moveCompletedLocked deletes client's move from etcd in the background, when
// this instance leads the group. Caller holds g.mu.
func (g *group) moveCompletedLocked(client string) { g.movesCompletedLocked([]string{client}) }

// movesCompletedLocked deletes the moves of clients from etcd, one after
// the other in one background call, when this instance leads the group.
// Caller holds g.mu.
func (g *group) movesCompletedLocked(clients []string) {
	ms, l := g.b.opts.Moves, g.b.opts.Leadership
	if ms == nil || l == nil || !g.leading || len(clients) == 0 {
		return
	}
	f, ok := l.Fence(g.name)
	if !ok {
		return
	}
	g.b.goAsync(func() {
		for _, client := range clients {
			ctx, cancel := context.WithTimeout(g.b.ctx, moveCommitTimeout)
			err := ms.Completed(ctx, f, g.name, client)
			cancel()
			if err != nil {
				g.b.log.Debug("cannot delete a completed move from etcd; its lease ends it", "group", g.name, "client", client, "err", err)
				if deposed(err) || g.b.ctx.Err() != nil {
					return
				}
			}
		}
	})
}

// moveBound is the snapshots' MoveBound: the front door bound client to
// replica id by a move it looked up in etcd. The leader's analyzer
// completes the move: here when this instance leads the group, else
// through a bound notice to the leader, with the move's term as looked up
// (boundnotice.go); the binding is in the events.
func (g *group) moveBound(client, id string) {
	term := g.looked.take(client)
	g.mu.Lock()
	leading := g.leading
	if leading {
		g.core.Bound(client, id)
		g.moveCompletedLocked(client)
		g.completedLocked(client, id, g.b.opts.Instance) // leaderevents.go
	} else if term <= 0 {
		term = g.roleLocked().status.LeaderTerm
	}
	g.emitLocked("binding", map[string]any{"client": client, "replica": id, "planned": true, "looked_up": true})
	g.mu.Unlock()
	if !leading && term > 0 {
		g.b.noticeBound(g.name, uint64(term), client, id)
	}
}

// setMoveHooks makes the snapshots' LookupMove and MoveBound (g.lookupMove,
// g.moveBoundFn); none on a single node. Called once, by newGroup.
func (g *group) setMoveHooks() {
	ms := g.b.opts.Moves
	if ms == nil {
		return
	}
	g.lookupMove = func(ctx context.Context, client string) (string, bool) {
		r, ok, err := ms.LookupRecord(ctx, g.name, client)
		if err != nil {
			g.b.log.Debug("cannot look a rebinding client's move up in etcd; picking as usual", "group", g.name, "err", err)
			return "", false
		}
		if ok {
			g.looked.put(client, r.Term)
		}
		return r.To, ok
	}
	g.moveBoundFn = g.moveBound
}

// maxLookedUp bounds the terms of looked-up moves a group remembers
// until their clients bind.
const maxLookedUp = 1024

// lookedUp remembers the term of each move a front door looked up, until
// its client binds (a lookup whose target cannot take the client is
// never bound: it is forgotten when the memory is full). Safe for
// concurrent use; the zero value is ready.
type lookedUp struct {
	mu    sync.Mutex
	terms map[string]int64
}

// put remembers client's move's term.
func (l *lookedUp) put(client string, term int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.terms == nil {
		l.terms = map[string]int64{}
	}
	if _, ok := l.terms[client]; !ok && len(l.terms) >= maxLookedUp {
		for c := range l.terms { // forget one, any
			delete(l.terms, c)
			break
		}
	}
	l.terms[client] = term
}

// take returns and forgets client's move's term (0: not remembered).
func (l *lookedUp) take(client string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.terms[client]
	delete(l.terms, client)
	return t
}
