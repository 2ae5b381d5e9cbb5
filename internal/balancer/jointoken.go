package balancer

import "github.com/fulcrum-lb/fulcrum/internal/registry"

// JoinMayRemove reports whether token is a join token of the group (the
// group's own or the global one) that registered replica id: a join token
// may remove only the replicas it registered, never those registered with
// the admin token, declared in the config, or registered with another
// join token.
func (b *Balancer) JoinMayRemove(groupName, id, token string) bool {
	if !b.JoinAllowed(groupName, token) {
		return false
	}
	g, m, err := b.member(groupName, id)
	if err != nil {
		return false
	}
	g.mu.Lock()
	hash := m.rec.JoinTokenHash
	g.mu.Unlock()
	return hash != "" && registry.TokenMatches(token, hash)
}
