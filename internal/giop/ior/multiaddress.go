package ior

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// Form is how a reference lists several addresses of one object.
type Form int

const (
	// FormAlternates is one IIOP 1.2 profile at the first address with a
	// TAG_ALTERNATE_IIOP_ADDRESS component for each further one (CORBA
	// 3.x, GIOP chapter, "IIOP IOR Profile Components" ›
	// "TAG_ALTERNATE_IIOP_ADDRESS").
	FormAlternates Form = iota
	// FormProfiles is one IIOP profile per address, in order, as a
	// multi-address corbaloc URL denotes.
	FormProfiles
)

// String returns "alternates" or "profiles".
func (f Form) String() string {
	switch f {
	case FormAlternates:
		return "alternates"
	case FormProfiles:
		return "profiles"
	}
	return fmt.Sprintf("Form(%d)", int(f))
}

// MultiAddress returns the reference of the object with key and type id
// typeID reachable at each of addrs, listed in form. With FormAlternates
// the profile is IIOP 1.2 whatever the addresses' versions (alternate
// addresses are an IIOP 1.2 component); with FormProfiles each profile has
// its address's version. addrs must not be empty. This is how a group's
// reference names every front door that serves it.
func MultiAddress(typeID string, key []byte, addrs []Address, form Form) (IOR, error) {
	if len(addrs) == 0 {
		return IOR{}, fmt.Errorf("ior: multi-address reference: no addresses, want at least one")
	}
	switch form {
	case FormProfiles:
		return Corbaloc{Addresses: addrs, Key: key}.IOR(typeID), nil
	case FormAlternates:
		p := IIOPProfile{Order: cdr.BigEndian, Version: V12, Host: addrs[0].Host, Port: addrs[0].Port, ObjectKey: key}
		for _, a := range addrs[1:] {
			p.Components = append(p.Components, AlternateIIOPAddress{Order: cdr.BigEndian, Host: a.Host, Port: a.Port})
		}
		return IOR{TypeID: typeID, Profiles: []Profile{p}}, nil
	}
	return IOR{}, fmt.Errorf("ior: multi-address reference: form %v, want alternates or profiles", form)
}

// Endpoint is one address a reference offers and the IIOP profile it
// comes from.
type Endpoint struct {
	Address Address
	// Profile is the IIOP profile that lists the address, as its own
	// address or as a TAG_ALTERNATE_IIOP_ADDRESS component.
	Profile IIOPProfile
	// ProfileIndex is Profile's index in the reference's Profiles (what
	// GIOP 1.2 ReferenceAddr calls selected_profile_index).
	ProfileIndex int
	// Alternate says the address comes from a TAG_ALTERNATE_IIOP_ADDRESS
	// component.
	Alternate bool
}

// Endpoints returns every address v offers, in the order a client tries
// them: each IIOP profile's own address followed by its alternate
// addresses (with the profile's IIOP version), profile after profile.
// Alternate addresses of IIOP 1.0 and 1.1 profiles are listed too (some
// ORBs write them there). Non-IIOP profiles offer none.
func (v IOR) Endpoints() []Endpoint {
	var out []Endpoint
	for i, p := range v.Profiles {
		ip, ok := p.(IIOPProfile)
		if !ok {
			continue
		}
		out = append(out, Endpoint{Address: ip.Address(), Profile: ip, ProfileIndex: i})
		for _, c := range ip.Components {
			if alt, ok := c.(AlternateIIOPAddress); ok {
				out = append(out, Endpoint{Address: Address{Version: ip.Version, Host: alt.Host, Port: alt.Port}, Profile: ip, ProfileIndex: i, Alternate: true})
			}
		}
	}
	return out
}
