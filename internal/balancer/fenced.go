package balancer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Fenced writes. In a cluster, the writes only a group's leader makes (the
// end of a replica's removal; the health state its probes decide) are
// transactions conditioned on its term (leader.Fence.Store): when the
// instance is no longer the leader, whether it knows it yet or not, etcd
// applies nothing and the write fails with an error wrapping
// leader.ErrDeposed, which is logged and changes nothing in the store. On
// a single node the same writes go to the store as any other.

// fencedRecords returns the records to write the leader's writes of g
// through: the fenced store of this instance's term, or an error wrapping
// leader.ErrDeposed when it does not lead g.
func (g *group) fencedRecords() (*groupstore.Records, error) {
	l := g.b.opts.Leadership
	if l == nil {
		return g.b.reg, nil
	}
	f, ok := l.Fence(g.name)
	if !ok {
		return nil, fmt.Errorf("%w: group %q: this instance does not lead it", leader.ErrDeposed, g.name)
	}
	st, ok := g.b.opts.Store.(*etcdstore.Store)
	if !ok {
		return nil, fmt.Errorf("balancer: group %q: a leader's write needs the etcd store, not %T", g.name, g.b.opts.Store)
	}
	return groupstore.New(f.Store(st)), nil
}

// refusedFenced handles a leader's write the fence refused (w.err wraps
// leader.ErrDeposed): it is logged, and a replica this instance already
// forgot is read back from the store, which still holds it (the new
// leader decides its removal).
func (g *group) refusedFenced(w *storeWrite) {
	g.b.log.Warn("not the group's leader any more: its write changed nothing", "group", g.name, "err", w.err)
	if w.delReplica == "" {
		return
	}
	ctx, cancel := context.WithTimeout(g.b.ctx, followRetry*4)
	defer cancel()
	kv, err := g.b.opts.Store.Get(ctx, groupstore.ReplicaKey(g.name, w.delReplica))
	if err != nil {
		return // gone meanwhile, or unreadable: the watch brings what comes
	}
	var rec protocol.Replica
	if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.Group != g.name || rec.ID != w.delReplica {
		return
	}
	g.b.followReplica(rec)
}

// deposed tells whether err is a fenced write's refusal.
func deposed(err error) bool { return errors.Is(err, leader.ErrDeposed) }
