package registry

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Listener is an address this balancer listens on.
type Listener struct {
	// Name says what listens, for errors: `front door of group "prime"`,
	// "admin API".
	Name string
	// Addr is the host:port as bound (a listener on port 0 gives the port
	// it got), or as configured before it is bound; a wildcard host ("",
	// 0.0.0.0, ::) listens on every interface. Port 0 matches nothing.
	Addr string
}

// Local is what the balancer's machine answers to, besides loopback
// addresses and "localhost", which are always local.
type Local struct {
	// Addrs are the interface addresses (net.InterfaceAddrs).
	Addrs []netip.Addr
	// Names are host names of the machine (os.Hostname), compared without
	// case.
	Names []string
}

// LoopTarget reports which of listeners a replica address (of a group of
// protocol proto) would connect to, if any: a replica there would be the
// balancer itself, a proxy loop, or the admin API open to whoever can
// reach a front door. It is a pure function of its arguments: the caller
// gathers the listeners (their bound addresses) and the machine's
// addresses.
//
// A replica host matches a listener on the same port when it is an
// address the listener accepts: for a listener on every interface, any
// local host (a wildcard form, "localhost" and *.localhost, a loopback
// address, an interface address, a name in local.Names); for a listener on
// one address, that address, "localhost" for a loopback one, and the
// wildcard forms and local names (which may reach it). Other host names
// are not resolved. GIOP addresses are checked at every IIOP profile and
// alternate address they carry; HTTP URLs at their port or the scheme's
// (80, 443).
func LoopTarget(proto, addr string, listeners []Listener, local Local) (Listener, bool) {
	for _, ep := range endpoints(proto, addr) {
		for _, l := range listeners {
			if reaches(ep, l.Addr, local) {
				return l, true
			}
		}
	}
	return Listener{}, false
}

// endpoint is one host and port a replica address connects to.
type endpoint struct {
	host string
	port int
}

// endpoints lists where addr connects; none for an address it cannot read
// (ValidateAddress reports those).
func endpoints(proto, addr string) []endpoint {
	switch proto {
	case protocol.ProtocolGIOP:
		ref, err := ior.Parse(addr)
		if err != nil {
			return nil
		}
		var out []endpoint
		for _, p := range ref.Profiles {
			ip, ok := p.(ior.IIOPProfile)
			if !ok {
				continue
			}
			out = append(out, endpoint{ip.Host, int(ip.Port)})
			for _, c := range ip.Components {
				if alt, ok := c.(ior.AlternateIIOPAddress); ok {
					out = append(out, endpoint{alt.Host, int(alt.Port)})
				}
			}
		}
		return out
	case protocol.ProtocolHTTP:
		u, err := url.Parse(addr)
		if err != nil {
			return nil
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return nil
		}
		return []endpoint{{u.Hostname(), n}}
	default:
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return nil
		}
		return []endpoint{{host, n}}
	}
}

// hostKind classifies a host as a replica address or listener names it.
type hostKind int

const (
	hostOther    hostKind = iota // a name not known to be local
	hostWildcard                 // "", 0.0.0.0, ::: every interface
	hostLoopback                 // localhost, *.localhost
	hostLocal                    // one of the machine's names
	hostIP                       // an address; see ip
)

// classify reads a host. IPv4-mapped IPv6 addresses are unmapped, zones
// dropped, and legacy IPv4 forms (127.1, 0x7f000001) read as C's
// inet_aton does, since a resolver may.
func classify(host string, local Local) (hostKind, netip.Addr) {
	h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if h == "" {
		return hostWildcard, netip.Addr{}
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		ip, err = parseLegacyIPv4(h)
	}
	if err == nil {
		ip = ip.WithZone("").Unmap()
		if ip.IsUnspecified() {
			return hostWildcard, netip.Addr{}
		}
		return hostIP, ip
	}
	lower := strings.ToLower(h)
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return hostLoopback, netip.Addr{}
	}
	for _, n := range local.Names {
		if n != "" && strings.EqualFold(strings.TrimSuffix(n, "."), h) {
			return hostLocal, netip.Addr{}
		}
	}
	return hostOther, netip.Addr{}
}

// reaches reports whether connecting to ep reaches a listener bound to
// listen.
func reaches(ep endpoint, listen string, local Local) bool {
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if n, err := strconv.Atoi(lport); err != nil || n == 0 || n != ep.port {
		return false
	}
	kind, ip := classify(ep.host, local)
	switch kind {
	case hostOther:
		return false
	case hostWildcard, hostLocal:
		return true // all of them reach the machine, maybe this listener
	}
	lkind, lip := classify(lhost, Local{})
	switch lkind {
	case hostWildcard:
		return kind == hostLoopback || isLocalIP(ip, local)
	case hostIP:
		if kind == hostLoopback {
			return lip.IsLoopback()
		}
		return ip == lip
	}
	// A listener on a name (localhost): the loopback addresses.
	return kind == hostLoopback || ip.IsLoopback()
}

func isLocalIP(ip netip.Addr, local Local) bool {
	if ip.IsLoopback() {
		return true
	}
	for _, a := range local.Addrs {
		if a.WithZone("").Unmap() == ip {
			return true
		}
	}
	return false
}

// parseLegacyIPv4 reads the IPv4 forms of inet_aton that netip refuses:
// one to four parts, each decimal, octal (leading 0) or hex (0x), the last
// filling the remaining bytes ("127.1" is 127.0.0.1).
func parseLegacyIPv4(s string) (netip.Addr, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, strconv.ErrSyntax
	}
	var vals []uint64
	for _, p := range parts {
		v, err := strconv.ParseUint(p, 0, 32)
		if err != nil || p == "" || p[0] == '+' || strings.Contains(p, "_") {
			return netip.Addr{}, strconv.ErrSyntax
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, strconv.ErrSyntax
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, strconv.ErrSyntax
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), nil
}
