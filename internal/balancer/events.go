package balancer

import "github.com/fulcrum-lb/fulcrum/protocol"

// Subscribe returns a channel of the group's events and a cancel func. Slow
// subscribers lose events rather than stall the group; EventsSince reads
// the same events without loss, or says when they are no longer kept.
func (b *Balancer) Subscribe(name string) (<-chan Event, func(), error) {
	g, err := b.group(name)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan Event, 64)
	g.mu.Lock()
	g.subs[ch] = struct{}{}
	g.mu.Unlock()
	cancel := func() {
		g.mu.Lock()
		if _, ok := g.subs[ch]; ok {
			delete(g.subs, ch)
			close(ch)
		}
		g.mu.Unlock()
	}
	return ch, cancel, nil
}

// groupEvent logs a group's creation or deletion (typ "group-created" or
// "group-deleted") on the balancer-wide stream.
func (b *Balancer) groupEvent(typ, name string) {
	b.events.append(Event{Type: typ, Group: name, Time: b.now(), Data: map[string]string{"group": name}})
}

// EventsSince returns the events of all groups after seq after, oldest
// first, with the seq of the last (after if none), and a channel closed
// when another event comes. ok is false when the events right after after
// are not kept (older than the last EventReplay events, or ahead of the
// sequence): last is then the latest seq, and a reader must resynchronise
// from the groups' status. Never blocks the balancer.
func (b *Balancer) EventsSince(after uint64) (evs []Event, last uint64, ok bool, next <-chan struct{}) {
	return b.events.Since(after)
}

// EventID is the event id ("<instance>-<seq>") of seq in this balancer's
// sequence.
func (b *Balancer) EventID(seq uint64) string { return b.events.id(seq) }

// ParseEventID reads the seq of an event id this balancer gave; ok is
// false for another instance's id (a client that reconnected to another
// instance of a cluster) and for anything that is not an id.
func (b *Balancer) ParseEventID(id string) (seq uint64, ok bool) { return b.events.parse(id) }

// Done is closed when the balancer shuts down.
func (b *Balancer) Done() <-chan struct{} { return b.ctx.Done() }

func (g *group) closeSubsLocked() {
	for ch := range g.subs {
		close(ch)
		delete(g.subs, ch)
	}
}

// emitLocked numbers the event in the balancer's event log (never
// blocking) and offers it to the group's subscribers. Caller holds g.mu.
func (g *group) emitLocked(typ string, data any) { g.emitFromLocked("", typ, data) }

// emitFromLocked is emitLocked for an event that happened at another
// instance (Event.Instance; "" this one). Caller holds g.mu.
func (g *group) emitFromLocked(instance, typ string, data any) {
	ev := g.b.events.append(Event{Type: typ, Group: g.name, Instance: instance, Time: g.b.now(), Data: data})
	for ch := range g.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

func (g *group) stepEventLocked() map[string]any {
	type rep struct {
		ID            string   `json:"id"`
		State         string   `json:"state"`
		Load          *float64 `json:"load"`
		EffectiveLoad *float64 `json:"effective_load"`
		Advisory      string   `json:"advisory"`
		Shed          float64  `json:"shed"`
		Epoch         uint64   `json:"epoch"`
		Bindings      uint64   `json:"bindings"`
		// The live figures of ReplicaStatus, so that a dashboard
		// following the stream needs no polling (docs/dashboard.md).
		Weight       float64  `json:"weight"`
		Inflight     int64    `json:"inflight"`
		Source       string   `json:"source"`
		RPS          *float64 `json:"rps"`
		LatencyP50MS *float64 `json:"latency_p50_ms"`
		LatencyP99MS *float64 `json:"latency_p99_ms"`
		BoundClients *int64   `json:"bound_clients"`
		Ejections    *uint64  `json:"ejections"`
		Applied      uint64   `json:"applied,omitempty"`
	}
	now := g.b.now()
	hub := g.hubLocked()
	pv := g.pushedViewLocked() // the leader's loads, advisories and moves (leaderevents.go)
	reps := []rep{}
	for _, v := range g.lastStep.Replicas {
		adv := v.Advisory
		r := rep{ID: v.ID, State: v.State, Advisory: adv.Advisory, Shed: adv.Shed, Epoch: adv.Epoch}
		if v.Reported {
			s, l := v.Sample, v.Load
			r.Load, r.EffectiveLoad = &s, &l
		}
		if l, ok := pv.load(v.ID); ok {
			r.Advisory, r.Shed, r.Epoch, r.Load, r.EffectiveLoad = advisoryOf(l), l.Shed, l.Epoch, nil, nil
			if l.Reported {
				s, e := l.Sample, l.Load
				r.Load, r.EffectiveLoad = &s, &e
			}
		}
		if m := g.members[v.ID]; m != nil {
			r.Bindings = m.counters.Bindings.Load()
			var rs protocol.ReplicaStatus
			g.replicaStatsLocked(&rs, m, v, true, now)
			r.Weight, r.Inflight, r.Source = m.rec.Weight, m.live.Inflight.Load(), rs.Source
			r.RPS, r.LatencyP50MS, r.LatencyP99MS = rs.RPS, rs.LatencyP50MS, rs.LatencyP99MS
			r.BoundClients, r.Ejections = rs.BoundClients, rs.Ejections
			if hub != nil {
				r.Applied = hub.AppliedBy(v.ID)
			}
		}
		reps = append(reps, r)
	}
	var moves any = g.lastStep.Moves
	if pv != nil {
		moves = pv.plannedMoves()
	}
	ev := map[string]any{"replicas": reps, "moves": moves}
	if g.conns != nil && g.spec.Protocol == protocol.ProtocolTCP {
		ev["connections"] = g.conns.Len()
	}
	if g.aff != nil {
		ev["sessions"] = g.aff.Len()
	}
	return ev
}

func (g *group) membersEventLocked() map[string]any {
	ids := make([]map[string]string, 0, len(g.order))
	for _, m := range g.order {
		ids = append(ids, map[string]string{"id": m.rec.ID, "address": m.rec.Address, "state": g.stateLocked(m)})
	}
	return map[string]any{"replicas": ids}
}
