package registry

import (
	"github.com/fulcrum-lb/fulcrum/internal/affinity/rules"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// validateAffinity checks g's affinity rules (docs/affinity.md): they
// apply to tcp groups and to per-request http groups (in on-demand and
// per-session groups the binding keeps a client on its replica, and the
// front door never sees later calls). Errors are *protocol.FieldError
// naming the rule's field ("affinity[1].match").
func validateAffinity(g protocol.Group) error {
	if len(g.Affinity) == 0 {
		return nil
	}
	switch {
	case g.Protocol == protocol.ProtocolHTTP && g.Binding != protocol.PerRequest:
		return &protocol.FieldError{Field: "affinity", Value: len(g.Affinity),
			Allowed: "applies to tcp groups and per-request http groups only (binding is " + g.Binding + ": the binding already keeps a client on its replica)"}
	case g.Protocol != protocol.ProtocolHTTP && g.Protocol != protocol.ProtocolTCP:
		return &protocol.FieldError{Field: "affinity", Value: len(g.Affinity),
			Allowed: "applies to tcp groups and per-request http groups only (protocol is " + g.Protocol + ")"}
	}
	_, err := rules.Compile(g.Protocol, g.Affinity)
	return err
}
