package ior

import (
	"fmt"
	"strings"
)

// Parse parses an object reference in either textual form a user may give:
// a stringified IOR ("IOR:...") or a corbaloc URL ("corbaloc:..."), which
// becomes an IOR with an empty type id and one IIOP profile per address.
// A stringified IOR keeps its repository id, so references forwarded to
// clients stay typed; give one parsed from corbaloc a TypeID (the group's,
// say) before forwarding clients to it.
func Parse(s string) (IOR, error) {
	t := strings.TrimSpace(s)
	switch {
	case len(t) >= len(iorPrefix) && strings.EqualFold(t[:len(iorPrefix)], iorPrefix):
		return ParseStringified(t)
	case len(t) >= len(corbalocPrefix) && strings.EqualFold(t[:len(corbalocPrefix)], corbalocPrefix):
		c, err := ParseCorbaloc(t)
		if err != nil {
			return IOR{}, err
		}
		return c.IOR(""), nil
	}
	return IOR{}, fmt.Errorf("ior: reference must start with %q or %q", iorPrefix, corbalocPrefix)
}

// WithAddress returns a copy of v that sends clients to host and port: every
// IIOP profile keeps its version, object key and components but gets the new
// address; TAG_ALTERNATE_IIOP_ADDRESS components and non-IIOP profiles,
// which would lead clients around the new address, are dropped. The type id
// is kept, so references built this way stay typed. This is how a side-car
// in front of a replica, or a replica registered by corbaloc, gets the IOR
// clients are forwarded to.
func (v IOR) WithAddress(host string, port uint16) IOR {
	out := IOR{TypeID: v.TypeID}
	for _, p := range v.Profiles {
		ip, ok := p.(IIOPProfile)
		if !ok {
			continue
		}
		ip.Host, ip.Port = host, port
		var comps []Component
		for _, c := range ip.Components {
			if c.Tag() != TagAlternateIIOPAddress {
				comps = append(comps, c)
			}
		}
		ip.Components = comps
		out.Profiles = append(out.Profiles, ip)
	}
	return out
}
