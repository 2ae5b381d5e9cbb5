package registry

import (
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// GroupIOR is a GIOP group's reference naming every front door that
// serves it: the addresses of its corbaloc reference (see GroupCorbaloc)
// and then also, each once, as one IIOP 1.2 profile with
// TAG_ALTERNATE_IIOP_ADDRESS components, typed with typeID (see
// GroupTypeID). That is the form omniORB and omniORBpy fail over with
// (docs/cluster.md, "GIOP clients across instances"); an IOR with one
// profile per address they do not.
func GroupIOR(ref ior.Corbaloc, typeID string, also []ior.Address) (ior.IOR, error) {
	seen := map[string]bool{}
	var addrs []ior.Address
	for _, a := range append(append([]ior.Address(nil), ref.Addresses...), also...) {
		if k := a.HostPort(); !seen[k] {
			seen[k] = true
			addrs = append(addrs, a)
		}
	}
	return ior.MultiAddress(typeID, ref.Key, addrs, ior.FormAlternates)
}
