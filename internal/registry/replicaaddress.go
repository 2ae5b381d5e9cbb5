package registry

import (
	"errors"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// AddressProtocol is the protocol g's replica addresses are written in: a
// replicated group's replicas are their agents (fulcrum agent replicated),
// registered by the agent's http:// or https:// listen URL whatever the
// group's protocol; every other group's replicas are addressed in the
// group's protocol (a URL, an IOR or corbaloc URL, host:port).
func AddressProtocol(g protocol.Group) string {
	if IsReplicated(g) {
		return protocol.ProtocolHTTP
	}
	return g.Protocol
}

// ValidateGroupAddress checks a replica address for group g: as
// ValidateAddress in AddressProtocol(g), and for a replicated GIOP group an
// object reference is refused with a message that says where it belongs
// (the agent's --target).
func ValidateGroupAddress(g protocol.Group, addr string) error {
	if IsReplicated(g) && (hasPrefixFold(addr, "IOR:") || hasPrefixFold(addr, "corbaloc:")) {
		return errors.New("must be the http:// or https:// listen URL of the replica's agent (fulcrum agent replicated --listen): " +
			"a replicated group's replicas are their agents; the servant's IOR or corbaloc URL is the agent's --target")
	}
	return ValidateAddress(AddressProtocol(g), addr)
}
