package balancer

// groupHealth connects a group to the health state machines: active probes
// and passive ejection. Methods ending in Locked expect g.mu held.
type groupHealth struct {
	g *group
}

func newGroupHealth(g *group) *groupHealth { return &groupHealth{g: g} }

func (h *groupHealth) startLocked()     {}
func (h *groupHealth) stopLocked()      {}
func (h *groupHealth) configureLocked() {}

func (h *groupHealth) observe(id string, failed bool) {}
