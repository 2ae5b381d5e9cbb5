package registry

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// GIOP settings of a group (protocol giop).
const (
	// DefaultGIOPMaxMessageSize is the default limit of a GIOP message's
	// size (message_size, after the header), 16 MiB.
	DefaultGIOPMaxMessageSize = 16 << 20
	// MaxGIOPMaxMessageSize is the largest limit allowed, 1 GiB.
	MaxGIOPMaxMessageSize = 1 << 30
	// MinGIOPMaxMessageSize is the smallest limit allowed, 1 KiB.
	MinGIOPMaxMessageSize = 1 << 10

	// DefaultGIOPMaxBufferedBytes is the default bound on what the
	// half-read messages of a front door hold together, 64 MiB.
	DefaultGIOPMaxBufferedBytes = 64 << 20
	// MinGIOPMaxBufferedBytes and MaxGIOPMaxBufferedBytes bound it:
	// 64 KiB and 64 GiB.
	MinGIOPMaxBufferedBytes = 64 << 10
	MaxGIOPMaxBufferedBytes = 64 << 30

	// CORBAObjectTypeID is the type id of a group's IOR when none of its
	// replicas says its own.
	CORBAObjectTypeID = "IDL:omg.org/CORBA/Object:1.0"
)

func giopWithDefaults(c *protocol.GIOP) {
	if c.Locate == "" {
		c.Locate = protocol.LocateForward
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultGIOPMaxMessageSize
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = DefaultGIOPMaxBufferedBytes
	}
}

func validateGIOP(g protocol.Group) error {
	fe := func(field string, v any, allowed string) error {
		return &protocol.FieldError{Field: field, Value: v, Allowed: allowed}
	}
	if g.Protocol != protocol.ProtocolGIOP {
		if g.GIOP != (protocol.GIOP{}) {
			return fe("giop", g.GIOP, "is only allowed with protocol giop")
		}
		return nil
	}
	switch g.GIOP.Locate {
	case protocol.LocateForward, protocol.LocateHere:
	default:
		return fe("giop.locate", g.GIOP.Locate, "must be forward or here")
	}
	if n := g.GIOP.MaxMessageSize; n < MinGIOPMaxMessageSize || n > MaxGIOPMaxMessageSize {
		return fe("giop.max_message_size", n, fmt.Sprintf("must be in [%d, %d] bytes", MinGIOPMaxMessageSize, MaxGIOPMaxMessageSize))
	}
	if n := g.GIOP.MaxBufferedBytes; n < MinGIOPMaxBufferedBytes || n > MaxGIOPMaxBufferedBytes {
		return fe("giop.max_buffered_bytes", n, fmt.Sprintf("must be in [%d, %d] bytes", MinGIOPMaxBufferedBytes, MaxGIOPMaxBufferedBytes))
	}
	// The derived default may carry port 0 (any free port), replaced by
	// the bound port at run time.
	if g.Advertise != "" && g.Advertise != AdvertiseFor(g.Protocol, g.FrontDoor) {
		if _, err := GroupCorbaloc(g.Advertise, g.Name); err != nil {
			return fe("advertise", g.Advertise, err.Error())
		}
	}
	return nil
}

// GroupCorbaloc is a GIOP group's object reference as a corbaloc URL: the
// group's advertise URL ("corbaloc:iiop:host:port", any IIOP version and
// addresses) with the group's name as the object key. An advertise URL
// that already names a key must name the group's.
func GroupCorbaloc(advertise, group string) (ior.Corbaloc, error) {
	if !hasPrefixFold(advertise, "corbaloc:") {
		return ior.Corbaloc{}, errors.New("must be a corbaloc:iiop: URL such as corbaloc:iiop:lb.example:2809")
	}
	c, err := ior.ParseCorbaloc(advertise)
	if err != nil {
		return ior.Corbaloc{}, fmt.Errorf("must be a corbaloc:iiop: URL (%v)", err)
	}
	if c.Key != nil && string(c.Key) != group {
		return ior.Corbaloc{}, fmt.Errorf("must have no object key, or the group's name %q as its key", group)
	}
	c.Key = []byte(group)
	return c, nil
}

// GroupTypeID is the repository id a GIOP group's own IOR carries: the
// first of its replicas' type ids that is set, else CORBAObjectTypeID.
func GroupTypeID(replicaAddresses []string) string {
	for _, a := range replicaAddresses {
		if ref, err := ParseGIOPAddress(a); err == nil && ref.TypeID != "" {
			return ref.TypeID
		}
	}
	return CORBAObjectTypeID
}

// ParseGIOPAddress parses a GIOP replica's address, an "IOR:" string or a
// "corbaloc:iiop:" URL, and checks that it can be forwarded to: it has an
// IIOP profile with a host, a port and an object key. The type id of a
// stringified IOR is kept; one from a corbaloc URL is "".
func ParseGIOPAddress(addr string) (ior.IOR, error) {
	if !hasPrefixFold(addr, "IOR:") && !hasPrefixFold(addr, "corbaloc:") {
		return ior.IOR{}, errors.New("must be a stringified IOR (IOR:...) or a corbaloc:iiop: URL such as corbaloc:iiop:1.2@10.0.0.5:2809/key")
	}
	ref, err := ior.Parse(addr)
	if err != nil {
		return ior.IOR{}, fmt.Errorf("must be a valid object reference (%v)", err)
	}
	p, ok := ref.IIOP()
	if !ok {
		if ref.IsNil() {
			return ior.IOR{}, fmt.Errorf("must not be a nil reference (type id %q, no profiles)", ref.TypeID)
		}
		return ior.IOR{}, fmt.Errorf("must have an IIOP profile (TAG_INTERNET_IOP); the reference of type %q has %d other profiles", ref.TypeID, len(ref.Profiles))
	}
	switch {
	case p.Host == "":
		return ior.IOR{}, fmt.Errorf("must have an IIOP profile with a host (type id %q)", ref.TypeID)
	case p.Port == 0:
		return ior.IOR{}, fmt.Errorf("must have an IIOP profile with a port other than 0 (type id %q, host %s)", ref.TypeID, p.Host)
	case len(p.ObjectKey) == 0:
		return ior.IOR{}, fmt.Errorf("must name an object key (type id %q, at %s)", ref.TypeID, p.Address().HostPort())
	}
	return ref, nil
}

// normalizeGIOPAddress is the form GIOP addresses are compared in: the
// endpoint and object key of the first IIOP profile, so that one object
// registered as an IOR and as a corbaloc URL is the same replica.
func normalizeGIOPAddress(addr string) (string, bool) {
	ref, err := ParseGIOPAddress(addr)
	if err != nil {
		return "", false
	}
	p, _ := ref.IIOP()
	return "iiop://" + strings.ToLower(p.Address().HostPort()) + "/" + hex.EncodeToString(p.ObjectKey), true
}

func hasPrefixFold(s, prefix string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
