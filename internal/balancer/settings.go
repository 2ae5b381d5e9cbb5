package balancer

import (
	"io"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// SetJoinToken replaces the global join token ("" = none), as a config
// reload does. Replicas that registered with the old one keep their own
// tokens.
func (b *Balancer) SetJoinToken(token string) { b.joinToken.Store(&token) }

// SetAccessLog replaces the access log of the HTTP front doors (nil: off)
// and its format (json: JSON lines; else logfmt), as a config reload does.
// A running HTTP front door is replaced on the same listener by one writing
// to w; its open connections finish on the old one, which keeps writing to
// the old writer until they end.
func (b *Balancer) SetAccessLog(w io.Writer, json bool) {
	b.accessLog.Store(&accessLog{w: w, json: json})
	b.mu.Lock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		if !g.running || g.fd == nil || g.spec.Protocol != protocol.ProtocolHTTP {
			g.mu.Unlock()
			continue
		}
		old, gs := g.swapFrontDoorLocked(), g.spec
		g.mu.Unlock()
		retire(old, gs)
	}
}

// accessLog holds the access log writer, which may be nil, and its format
// (JSON lines, or logfmt).
type accessLog struct {
	w    io.Writer
	json bool
}
