package ior

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultPort is the IIOP port a corbaloc address without one means (CORBA
// 3.x, ORB Interoperability Architecture chapter, "corbaloc:iiop URL").
const DefaultPort = 2809

// Address is one IIOP endpoint: the IIOP version to speak and where.
type Address struct {
	Version Version
	// Host is a DNS name or an IP address; IPv6 addresses come without
	// brackets.
	Host string
	Port uint16
}

// HostPort returns "host:port", with an IPv6 host in brackets.
func (a Address) HostPort() string {
	host := a.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(a.Port))
}

// String returns the address as in a corbaloc URL: "1.2@host:port", without
// the version when it is 1.0, the default.
func (a Address) String() string {
	if a.Version == V10 {
		return a.HostPort()
	}
	return a.Version.String() + "@" + a.HostPort()
}

func parseObjAddr(obj string) (Address, error) {
	var addr string
	switch {
	case len(obj) >= 5 && strings.EqualFold(obj[:5], "iiop:"):
		addr = obj[5:]
	case strings.HasPrefix(obj, ":"):
		addr = obj[1:]
	default:
		proto, _, ok := strings.Cut(obj, ":")
		if !ok {
			return Address{}, fmt.Errorf("no protocol (want \"iiop:\" or \":\")")
		}
		return Address{}, fmt.Errorf("protocol %q is not supported, only iiop", proto)
	}
	a := Address{Version: V10, Port: DefaultPort}
	if ver, hostport, ok := strings.Cut(addr, "@"); ok {
		v, err := parseVersion(ver)
		if err != nil {
			return Address{}, err
		}
		a.Version, addr = v, hostport
	}
	host, port, err := splitHostPort(addr)
	if err != nil {
		return Address{}, err
	}
	a.Host = host
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || port[0] == '+' {
			return Address{}, fmt.Errorf("port %q is not a number in 1..65535", port)
		}
		a.Port = uint16(n)
	}
	return a, nil
}

func parseVersion(s string) (Version, error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return Version{}, fmt.Errorf("version %q is not major.minor", s)
	}
	ma, err1 := strconv.ParseUint(maj, 10, 8)
	mi, err2 := strconv.ParseUint(min, 10, 8)
	if err1 != nil || err2 != nil || !isDigits(maj) || !isDigits(min) {
		return Version{}, fmt.Errorf("version %q is not major.minor", s)
	}
	if ma != 1 {
		return Version{}, fmt.Errorf("IIOP version %s, want 1.x", s)
	}
	return Version{uint8(ma), uint8(mi)}, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port"; port is
// "" when absent.
func splitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("IPv6 address without closing bracket")
		}
		host, rest := s[1:end], s[end+1:]
		if !isIPv6Literal(host) {
			return "", "", fmt.Errorf("%q in brackets is not an IPv6 address", host)
		}
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' {
			return "", "", fmt.Errorf("unexpected %q after the IPv6 address", rest)
		}
		if rest == ":" {
			return "", "", fmt.Errorf("empty port")
		}
		return host, rest[1:], nil
	}
	host, port, hasPort := strings.Cut(s, ":")
	if strings.Contains(port, ":") {
		return "", "", fmt.Errorf("an IPv6 address must be in brackets")
	}
	if host == "" {
		return "", "", fmt.Errorf("empty host")
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !isAlnum(c) && c != '-' && c != '.' && c != '_' {
			return "", "", fmt.Errorf("host %q contains %q", host, c)
		}
	}
	if hasPort && port == "" {
		return "", "", fmt.Errorf("empty port")
	}
	return host, port, nil
}

func isIPv6Literal(s string) bool {
	if !strings.Contains(s, ":") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isHex(c) && c != ':' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// ParseHostPort parses "host:port" or "[v6]:port" into an IIOP 1.2
// address. The port is required and must be in 1..65535; the host is a
// DNS name or an IP address as in a corbaloc URL.
func ParseHostPort(s string) (Address, error) {
	host, port, err := splitHostPort(s)
	if err != nil {
		return Address{}, fmt.Errorf("ior: address %q: %w", s, err)
	}
	if port == "" {
		return Address{}, fmt.Errorf("ior: address %q: no port, want host:port", s)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 || port[0] == '+' {
		return Address{}, fmt.Errorf("ior: address %q: port %q is not a number in 1..65535", s, port)
	}
	return Address{Version: V12, Host: host, Port: uint16(n)}, nil
}
