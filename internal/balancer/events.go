package balancer

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

// EventsSince returns the events of all groups after id after, oldest
// first, with the id of the last (after if none), and a channel closed
// when another event comes. ok is false when the events right after after
// are not kept (older than the last EventReplay events, or ahead of the
// sequence): last is then the latest id, and a reader must resynchronise
// from the groups' status. Never blocks the balancer.
func (b *Balancer) EventsSince(after uint64) (evs []Event, last uint64, ok bool, next <-chan struct{}) {
	return b.events.Since(after)
}

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
func (g *group) emitLocked(typ string, data any) {
	ev := g.b.events.append(Event{Type: typ, Group: g.name, Time: g.b.now(), Data: data})
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
	}
	reps := []rep{}
	for _, v := range g.lastStep.Replicas {
		adv := v.Advisory
		r := rep{ID: v.ID, State: v.State, Advisory: adv.Advisory, Shed: adv.Shed, Epoch: adv.Epoch}
		if v.Reported {
			s, l := v.Sample, v.Load
			r.Load, r.EffectiveLoad = &s, &l
		}
		if m := g.members[v.ID]; m != nil {
			r.Bindings = m.counters.Bindings.Load()
		}
		reps = append(reps, r)
	}
	return map[string]any{"replicas": reps, "moves": g.lastStep.Moves}
}

func (g *group) membersEventLocked() map[string]any {
	ids := make([]map[string]string, 0, len(g.order))
	for _, m := range g.order {
		ids = append(ids, map[string]string{"id": m.rec.ID, "address": m.rec.Address, "state": g.stateLocked(m)})
	}
	return map[string]any{"replicas": ids}
}
