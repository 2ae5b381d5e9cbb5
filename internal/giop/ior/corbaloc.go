package ior

import (
	"fmt"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

const corbalocPrefix = "corbaloc:"

// Corbaloc is a parsed corbaloc URL with IIOP addresses (CORBA 3.x, ORB
// Interoperability Architecture chapter, "Object URLs" › "corbaloc URL"):
// the same object key reachable at any of several addresses.
type Corbaloc struct {
	Addresses []Address
	// Key is the object key, %xx escapes decoded; nil when the URL has none.
	Key []byte
}

// ParseCorbaloc parses "corbaloc:" followed by comma-separated IIOP
// addresses and an optional "/" and object key:
//
//	corbaloc:iiop:1.2@lb.example:2809,:[::1]/group%2Fa
//
// Each address starts with "iiop:" or just ":", then an optional
// "major.minor@" (default 1.0), a host (IPv6 in brackets) and an optional
// ":port" (default 2809). The key may contain "/" and %xx escapes. Other
// protocols (rir:, ssliop:, ...) are errors. The scheme and protocol are
// matched without regard to case; surrounding white space is ignored.
func ParseCorbaloc(s string) (Corbaloc, error) {
	s = strings.TrimSpace(s)
	if len(s) < len(corbalocPrefix) || !strings.EqualFold(s[:len(corbalocPrefix)], corbalocPrefix) {
		return Corbaloc{}, fmt.Errorf("ior: corbaloc URL must start with %q", corbalocPrefix)
	}
	rest := s[len(corbalocPrefix):]
	list, key, hasKey := strings.Cut(rest, "/")
	var c Corbaloc
	for i, obj := range strings.Split(list, ",") {
		a, err := parseObjAddr(obj)
		if err != nil {
			return Corbaloc{}, fmt.Errorf("ior: corbaloc address %d %q: %w", i+1, obj, err)
		}
		c.Addresses = append(c.Addresses, a)
	}
	if hasKey {
		k, err := unescapeKey(key)
		if err != nil {
			return Corbaloc{}, fmt.Errorf("ior: corbaloc object key %q: %w", key, err)
		}
		c.Key = k
	}
	return c, nil
}

// String returns c as a corbaloc URL, every address with its port and its
// version unless 1.0, the key escaped where needed.
func (c Corbaloc) String() string {
	var b strings.Builder
	b.WriteString(corbalocPrefix)
	for i, a := range c.Addresses {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("iiop:")
		b.WriteString(a.String())
	}
	b.WriteByte('/')
	escapeKey(&b, c.Key)
	return b.String()
}

// IOR returns the reference c denotes: typeID (which a corbaloc URL does not
// carry; "" if unknown) and one IIOP profile per address, in order, each with
// c's key and no components.
func (c Corbaloc) IOR(typeID string) IOR {
	v := IOR{TypeID: typeID}
	for _, a := range c.Addresses {
		v.Profiles = append(v.Profiles, IIOPProfile{
			Order:     cdr.BigEndian,
			Version:   a.Version,
			Host:      a.Host,
			Port:      a.Port,
			ObjectKey: c.Key,
		})
	}
	return v
}
