package ior

import (
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// ComponentTag identifies a tagged component (IOP::ComponentId).
type ComponentTag uint32

// Component tags decoded by this package (CORBA 3.x, ORB Interoperability
// Architecture chapter, "Standard IOR Components"), and a few others worth
// naming.
const (
	TagORBType              ComponentTag = 0
	TagCodeSets             ComponentTag = 1
	TagPolicies             ComponentTag = 2
	TagAlternateIIOPAddress ComponentTag = 3
	TagSSLSecTrans          ComponentTag = 20
	TagCSISecMechList       ComponentTag = 33
)

// ORB type ids (TAG_ORB_TYPE values) of ORBs seen in fulcrum's tests.
const (
	ORBTypeOmniORB uint32 = 0x41545400 // "ATT\x00"
	ORBTypeJacORB  uint32 = 0x4a414300 // "JAC\x00"
	ORBTypeTAO     uint32 = 0x54414f00 // "TAO\x00"
)

// Code set ids from the OSF code set registry used in TAG_CODE_SETS
// (CORBA 3.x, ORB Interoperability Architecture chapter, "Code Set
// Conversion").
const (
	CodeSetLatin1 uint32 = 0x00010001 // ISO 8859-1
	CodeSetUTF16  uint32 = 0x00010109
	CodeSetUTF8   uint32 = 0x05010001
)

// Component is one IOP::TaggedComponent of an IIOP 1.1+ profile:
// [ORBType], [CodeSets], [AlternateIIOPAddress] or [OpaqueComponent].
type Component interface {
	// Tag returns the component's IOP::ComponentId.
	Tag() ComponentTag
	encodeData(e *cdr.Encoder)
}

// EncodeComponent writes an IOP::TaggedComponent at e's position.
func EncodeComponent(e *cdr.Encoder, c Component) {
	e.ULong(uint32(c.Tag()))
	c.encodeData(e)
}

// DecodeComponent reads an IOP::TaggedComponent at d's position: the tags
// this package knows decoded, others opaque. Failures are recorded on d.
func DecodeComponent(d *cdr.Decoder) Component {
	tag := ComponentTag(d.ULong("component.tag"))
	switch tag {
	case TagORBType:
		var c ORBType
		d.Encapsulation("orb_type.component_data", func(d *cdr.Decoder) {
			c.Order = d.Order()
			c.ID = d.ULong("orb_type")
		})
		return c
	case TagCodeSets:
		var c CodeSets
		d.Encapsulation("code_sets.component_data", func(d *cdr.Decoder) {
			c.Order = d.Order()
			c.Char = decodeCodeSet(d, "code_sets.ForCharData.native_code_set", "code_sets.ForCharData.conversion_code_sets")
			c.Wchar = decodeCodeSet(d, "code_sets.ForWcharData.native_code_set", "code_sets.ForWcharData.conversion_code_sets")
		})
		return c
	case TagAlternateIIOPAddress:
		var c AlternateIIOPAddress
		d.Encapsulation("alternate_iiop_address.component_data", func(d *cdr.Decoder) {
			c.Order = d.Order()
			c.Host = d.String("alternate_iiop_address.HostID")
			c.Port = d.UShort("alternate_iiop_address.port")
		})
		return c
	}
	return OpaqueComponent{ID: tag, Data: d.OctetSeq("component.component_data")}
}

// ORBType is TAG_ORB_TYPE: which ORB made the reference.
type ORBType struct {
	Order cdr.ByteOrder // of the component's encapsulation
	ID    uint32
}

// Tag returns TagORBType.
func (ORBType) Tag() ComponentTag { return TagORBType }

func (c ORBType) encodeData(e *cdr.Encoder) {
	e.Encapsulation(c.Order, func(e *cdr.Encoder) { e.ULong(c.ID) })
}

// CodeSets is TAG_CODE_SETS, CONV_FRAME::CodeSetComponentInfo: the native
// and conversion code sets of the server for char and wchar data.
type CodeSets struct {
	Order       cdr.ByteOrder // of the component's encapsulation
	Char, Wchar CodeSet
}

// CodeSet is CONV_FRAME::CodeSetComponent.
type CodeSet struct {
	Native     uint32
	Conversion []uint32
}

// Tag returns TagCodeSets.
func (CodeSets) Tag() ComponentTag { return TagCodeSets }

func (c CodeSets) encodeData(e *cdr.Encoder) {
	e.Encapsulation(c.Order, func(e *cdr.Encoder) {
		for _, cs := range []CodeSet{c.Char, c.Wchar} {
			e.ULong(cs.Native)
			e.ULong(uint32(len(cs.Conversion)))
			for _, id := range cs.Conversion {
				e.ULong(id)
			}
		}
	})
}

func decodeCodeSet(d *cdr.Decoder, nativeField, conversionField string) CodeSet {
	var cs CodeSet
	cs.Native = d.ULong(nativeField)
	n := d.SeqLen(conversionField, 4)
	if n > 0 {
		cs.Conversion = make([]uint32, n)
		for i := range cs.Conversion {
			cs.Conversion[i] = d.ULong(conversionField)
		}
	}
	return cs
}

// AlternateIIOPAddress is TAG_ALTERNATE_IIOP_ADDRESS: another host and port
// where the same object can be reached.
type AlternateIIOPAddress struct {
	Order cdr.ByteOrder // of the component's encapsulation
	Host  string
	Port  uint16
}

// Tag returns TagAlternateIIOPAddress.
func (AlternateIIOPAddress) Tag() ComponentTag { return TagAlternateIIOPAddress }

func (c AlternateIIOPAddress) encodeData(e *cdr.Encoder) {
	e.Encapsulation(c.Order, func(e *cdr.Encoder) {
		e.String(c.Host)
		e.UShort(c.Port)
	})
}

// OpaqueComponent is a component this package does not decode, kept as it
// came and written back byte for byte.
type OpaqueComponent struct {
	ID ComponentTag
	// Data is component_data as received, without its length.
	Data []byte
}

// Tag returns c.ID.
func (c OpaqueComponent) Tag() ComponentTag { return c.ID }

func (c OpaqueComponent) encodeData(e *cdr.Encoder) { e.OctetSeq(c.Data) }
