package balancer

// AffinityEntries returns the number of entries group name's session
// table holds (-1: unknown group or no table). Tests use it to see the
// group's loop expire entries.
func (b *Balancer) AffinityEntries(name string) int {
	g, err := b.group(name)
	if err != nil {
		return -1
	}
	g.mu.Lock()
	t := g.aff
	g.mu.Unlock()
	if t == nil {
		return -1
	}
	return t.Len()
}
