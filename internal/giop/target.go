package giop

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// AddressingDisposition says how a GIOP 1.2 TargetAddress names the target
// (GIOP::AddressingDisposition).
type AddressingDisposition int16

// Addressing dispositions (CORBA 3.x, GIOP chapter, "Request Message" ›
// "Request Header").
const (
	KeyAddr       AddressingDisposition = 0
	ProfileAddr   AddressingDisposition = 1
	ReferenceAddr AddressingDisposition = 2
)

// String returns the spec's name, like "KeyAddr".
func (a AddressingDisposition) String() string {
	switch a {
	case KeyAddr:
		return "KeyAddr"
	case ProfileAddr:
		return "ProfileAddr"
	case ReferenceAddr:
		return "ReferenceAddr"
	}
	return fmt.Sprintf("AddressingDisposition(%d)", int16(a))
}

// TargetAddress names the object a Request or LocateRequest is for
// (GIOP::TargetAddress). GIOP 1.0 and 1.1 carry a bare object_key, which
// decodes as a KeyAddr target.
type TargetAddress struct {
	Disposition AddressingDisposition
	// ObjectKey is the key for KeyAddr.
	ObjectKey []byte
	// Profile is the profile for ProfileAddr.
	Profile ior.Profile
	// Reference is the whole IOR and the index of the profile the client
	// used, for ReferenceAddr.
	Reference IORAddressingInfo
}

// IORAddressingInfo is GIOP::IORAddressingInfo.
type IORAddressingInfo struct {
	SelectedProfileIndex uint32
	IOR                  ior.IOR
}

// KeyTarget returns a KeyAddr target for key.
func KeyTarget(key []byte) TargetAddress { return TargetAddress{Disposition: KeyAddr, ObjectKey: key} }

// Key returns the object key the target names, whatever its disposition:
// for ProfileAddr and ReferenceAddr, the key of the (selected) profile,
// which must be an IIOP profile.
func (t TargetAddress) Key() ([]byte, error) {
	var p ior.Profile
	switch t.Disposition {
	case KeyAddr:
		return t.ObjectKey, nil
	case ProfileAddr:
		p = t.Profile
	case ReferenceAddr:
		i := t.Reference.SelectedProfileIndex
		if uint64(i) >= uint64(len(t.Reference.IOR.Profiles)) {
			return nil, fmt.Errorf("giop: target selects profile %d of %d", i, len(t.Reference.IOR.Profiles))
		}
		p = t.Reference.IOR.Profiles[i]
	default:
		return nil, fmt.Errorf("giop: target has unknown disposition %v", t.Disposition)
	}
	ip, ok := p.(ior.IIOPProfile)
	if !ok {
		if p == nil {
			return nil, fmt.Errorf("giop: %v target without a profile", t.Disposition)
		}
		return nil, fmt.Errorf("giop: %v target is a profile with tag %d, not IIOP", t.Disposition, p.Tag())
	}
	return ip.ObjectKey, nil
}

// encodeTarget writes a TargetAddress (1.2) or an object_key (1.0, 1.1).
func encodeTarget(e *cdr.Encoder, v Version, t TargetAddress) error {
	if !v.atLeast(2) {
		if t.Disposition != KeyAddr {
			return invalid("a %v target needs GIOP 1.2", t.Disposition)
		}
		e.OctetSeq(t.ObjectKey)
		return nil
	}
	switch t.Disposition {
	case KeyAddr:
		e.Short(int16(t.Disposition))
		e.OctetSeq(t.ObjectKey)
	case ProfileAddr:
		if t.Profile == nil {
			return invalid("ProfileAddr target without a profile")
		}
		e.Short(int16(t.Disposition))
		ior.EncodeProfile(e, t.Profile)
	case ReferenceAddr:
		e.Short(int16(t.Disposition))
		e.ULong(t.Reference.SelectedProfileIndex)
		t.Reference.IOR.Encode(e)
	default:
		return invalid("unknown target disposition %v", t.Disposition)
	}
	return nil
}

func decodeTarget(d *cdr.Decoder, v Version) TargetAddress {
	if !v.atLeast(2) {
		return KeyTarget(d.OctetSeq("object_key"))
	}
	var t TargetAddress
	d.Align("target.disposition", 2)
	at := d.Offset()
	t.Disposition = AddressingDisposition(d.Short("target.disposition"))
	switch t.Disposition {
	case KeyAddr:
		t.ObjectKey = d.OctetSeq("target.object_key")
	case ProfileAddr:
		t.Profile = ior.DecodeProfile(d)
	case ReferenceAddr:
		t.Reference.SelectedProfileIndex = d.ULong("target.ior.selected_profile_index")
		t.Reference.IOR = ior.Decode(d)
	default:
		d.Fail("target.disposition", at, cdr.ErrInvalid, "unknown addressing disposition %d", int16(t.Disposition))
	}
	return t
}
