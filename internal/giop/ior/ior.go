package ior

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// ProfileTag identifies a profile's protocol (IOP::ProfileId).
type ProfileTag uint32

// Profile tags defined by CORBA 3.x, ORB Interoperability Architecture
// chapter, "Standard IOR Profiles".
const (
	TagInternetIOP        ProfileTag = 0
	TagMultipleComponents ProfileTag = 1
)

// IOR is an Interoperable Object Reference: the repository id of the
// object's most derived interface and one profile per way to reach it
// (IOP::IOR). An IOR with no profiles is a nil reference.
//
// Decoded IORs alias the bytes they were decoded from.
type IOR struct {
	// TypeID is the repository id, like "IDL:Prime:1.0"; "" when unknown.
	TypeID   string
	Profiles []Profile
}

// Profile is one IOP::TaggedProfile: an [IIOPProfile] or an
// [OpaqueProfile].
type Profile interface {
	// Tag returns the profile's IOP::ProfileId.
	Tag() ProfileTag
	encodeData(e *cdr.Encoder)
}

// OpaqueProfile is a profile of a protocol this package does not decode,
// kept as it came and written back byte for byte.
type OpaqueProfile struct {
	ID ProfileTag
	// Data is profile_data: the encapsulation's contents, byte-order octet
	// first, without the length.
	Data []byte
}

// Tag returns p.ID.
func (p OpaqueProfile) Tag() ProfileTag { return p.ID }

func (p OpaqueProfile) encodeData(e *cdr.Encoder) { e.OctetSeq(p.Data) }

// IsNil reports whether v is the nil reference (no profiles).
func (v IOR) IsNil() bool { return len(v.Profiles) == 0 }

// IIOP returns v's first IIOP profile.
func (v IOR) IIOP() (IIOPProfile, bool) {
	for _, p := range v.Profiles {
		if ip, ok := p.(IIOPProfile); ok {
			return ip, true
		}
	}
	return IIOPProfile{}, false
}

// Encode writes v in CDR at e's position (an IOR embedded in a message, such
// as a LOCATION_FORWARD reply body).
func (v IOR) Encode(e *cdr.Encoder) {
	e.String(v.TypeID)
	e.ULong(uint32(len(v.Profiles)))
	for _, p := range v.Profiles {
		EncodeProfile(e, p)
	}
}

// Decode reads an IOR embedded in CDR at d's position. Failures are recorded
// on d; check d.Err.
func Decode(d *cdr.Decoder) IOR {
	var v IOR
	v.TypeID = d.String("ior.type_id")
	n := d.SeqLen("ior.profiles", 8) // tag + empty profile_data
	if n > 0 {
		v.Profiles = make([]Profile, 0, n)
	}
	for range n {
		p := DecodeProfile(d)
		if d.Err() != nil {
			return IOR{}
		}
		v.Profiles = append(v.Profiles, p)
	}
	return v
}

// EncodeProfile writes an IOP::TaggedProfile at e's position.
func EncodeProfile(e *cdr.Encoder, p Profile) {
	e.ULong(uint32(p.Tag()))
	p.encodeData(e)
}

// DecodeProfile reads an IOP::TaggedProfile at d's position: IIOP profiles
// decoded, others opaque. Failures are recorded on d; check d.Err.
func DecodeProfile(d *cdr.Decoder) Profile {
	tag := ProfileTag(d.ULong("profile.tag"))
	if tag != TagInternetIOP {
		return OpaqueProfile{ID: tag, Data: d.OctetSeq("profile.profile_data")}
	}
	var p IIOPProfile
	d.Encapsulation("profile.profile_data", func(d *cdr.Decoder) { p.decode(d) })
	return p
}

// DecodeBytes decodes an IOR encoded in b in the given byte order at
// alignment offset, and requires it to fill b.
func DecodeBytes(b []byte, order cdr.ByteOrder, offset int) (IOR, error) {
	d := cdr.NewDecoder(b, order, offset)
	v := Decode(d)
	d.Done("ior")
	if err := d.Err(); err != nil {
		return IOR{}, fmt.Errorf("ior: %w", err)
	}
	return v, nil
}
