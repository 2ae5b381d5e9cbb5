package balancer

// Subscribe returns a channel of the group's events and a cancel func. Slow
// subscribers lose events rather than stall the group.
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

func (g *group) closeSubsLocked() {
	for ch := range g.subs {
		close(ch)
		delete(g.subs, ch)
	}
}

func (g *group) emitLocked(typ string, data any) {
	if len(g.subs) == 0 {
		return
	}
	ev := Event{Type: typ, Group: g.name, Time: g.b.now(), Data: data}
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
