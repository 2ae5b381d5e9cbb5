package balancer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Reports in a cluster (leadership.go). A report for a group this
// instance does not lead is refused with a *NotLeaderError naming the
// leader's /v1/report (Options.PeerURL), or ErrNoLeader when there is no
// leader or its URL is unknown here. A token unknown here is looked up in
// the store before it is refused: its replica may have registered at
// another instance a moment ago, and the watch not brought it yet.

// storedLookupTimeout bounds the store read of an unknown token.
const storedLookupTimeout = 2 * time.Second

// notLeaderLocked is the refusal of a report for g, which this instance
// does not lead; st is its leadership status. Caller holds g.mu.
func (g *group) notLeaderLocked(st leader.Status) error {
	if st.Leader == "" {
		return fmt.Errorf("%w: group %s is between leaders", ErrNoLeader, g.name)
	}
	if g.b.opts.PeerURL == nil {
		return fmt.Errorf("%w: group %s is led by instance %s, whose admin URL is unknown here", ErrNoLeader, g.name, st.Leader)
	}
	base, ok := g.b.opts.PeerURL(st.Leader)
	base = strings.TrimRight(base, "/")
	if !ok || base == "" {
		return fmt.Errorf("%w: group %s is led by instance %s, whose admin URL is unknown here", ErrNoLeader, g.name, st.Leader)
	}
	if base == strings.TrimRight(*g.b.adminURL.Load(), "/") {
		// This instance's own old term, not yet seen to end.
		return fmt.Errorf("%w: group %s: this instance's leadership is ending", ErrNoLeader, g.name)
	}
	return &NotLeaderError{Group: g.name, Leader: st.Leader, Term: st.LeaderTerm, URL: base + "/v1/report"}
}

// storedToken looks token up in the store (a linearizable read of the
// replicas) when the balancer is in a cluster, and applies the replica
// found as the watch would have; nil when not found (or not in a
// cluster). One lookup runs at a time: a token looked up while another
// lookup runs is refused at once, so that bad tokens cannot queue reads
// of etcd.
func (b *Balancer) storedToken(token string) *member {
	if b.opts.Leadership == nil || !b.lookupMu.TryLock() {
		return nil
	}
	defer b.lookupMu.Unlock()
	b.followMu.Lock() // storedlookup.go
	defer b.followMu.Unlock()
	hash := registry.HashToken(token)
	ctx, cancel := context.WithTimeout(b.ctx, storedLookupTimeout)
	defer cancel()
	kvs, _, err := b.opts.Store.List(ctx, groupstore.ReplicasPrefix)
	if err != nil {
		b.log.Warn("cannot look an unknown replica token up in the store", "err", err)
		return nil
	}
	for _, kv := range kvs {
		var rec protocol.Replica
		if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.TokenHash != hash {
			continue
		}
		b.followReplica(rec)
		b.mu.RLock()
		m := b.tokens[hash]
		b.mu.RUnlock()
		return m
	}
	return nil
}
