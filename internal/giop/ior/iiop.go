package ior

import (
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// IIOPProfile is the body of a TAG_INTERNET_IOP profile, IIOP::ProfileBody
// (CORBA 3.x, GIOP chapter, "IIOP IOR Profiles"): where to connect, the
// object key to send, and, from IIOP 1.1, tagged components.
type IIOPProfile struct {
	// Order is the byte order of the profile's encapsulation.
	Order   cdr.ByteOrder
	Version Version
	// Host is a DNS name or an IP address; IPv6 addresses come without
	// brackets.
	Host      string
	Port      uint16
	ObjectKey []byte
	// Components are written for IIOP 1.1 and later only; IIOP 1.0 profiles
	// have none.
	Components []Component
}

// Tag returns TagInternetIOP.
func (IIOPProfile) Tag() ProfileTag { return TagInternetIOP }

// Address returns where p says to connect.
func (p IIOPProfile) Address() Address {
	return Address{Version: p.Version, Host: p.Host, Port: p.Port}
}

func (p IIOPProfile) encodeData(e *cdr.Encoder) {
	e.Encapsulation(p.Order, func(e *cdr.Encoder) {
		e.Octet(p.Version.Major)
		e.Octet(p.Version.Minor)
		e.String(p.Host)
		e.UShort(p.Port)
		e.OctetSeq(p.ObjectKey)
		if p.Version.Minor >= 1 {
			e.ULong(uint32(len(p.Components)))
			for _, c := range p.Components {
				EncodeComponent(e, c)
			}
		}
	})
}

// decode reads the profile body inside its encapsulation.
func (p *IIOPProfile) decode(d *cdr.Decoder) {
	p.Order = d.Order()
	at := d.Offset()
	p.Version.Major = d.Octet("iiop.iiop_version.major")
	p.Version.Minor = d.Octet("iiop.iiop_version.minor")
	if d.Err() == nil && p.Version.Major != 1 {
		d.Fail("iiop.iiop_version", at, cdr.ErrInvalid, "IIOP version %v, want 1.x", p.Version)
		return
	}
	p.Host = d.String("iiop.host")
	p.Port = d.UShort("iiop.port")
	p.ObjectKey = d.OctetSeq("iiop.object_key")
	if p.Version.Minor == 0 {
		return
	}
	n := d.SeqLen("iiop.components", 8) // tag + empty component_data
	if n > 0 {
		p.Components = make([]Component, 0, n)
	}
	for range n {
		c := DecodeComponent(d)
		if d.Err() != nil {
			return
		}
		p.Components = append(p.Components, c)
	}
}
