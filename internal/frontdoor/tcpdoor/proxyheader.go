package tcpdoor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
)

// trustList is a parsed tcp.proxy_protocol.trusted: the peers whose PROXY
// headers are read.
type trustList struct {
	src      []string
	prefixes []netip.Prefix
}

// ParseTrusted parses tcp.proxy_protocol.trusted: CIDRs ("10.0.0.0/8")
// or single addresses ("10.0.0.7", which is a /32 or /128). The error
// names the first entry that is neither.
func ParseTrusted(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("tcpdoor: trusted %q: must be a CIDR or an IP address", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("tcpdoor: trusted %q: must be a CIDR or an IP address", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// trustedPeer reports whether a connection from peer must start with a
// PROXY header: peer is in the snapshot's trusted list. The parsed list is
// cached until the list changes; an unparsable list (refused by the
// registry) trusts nobody.
func (s *Server) trustedPeer(list []string, peer net.Addr) bool {
	if len(list) == 0 {
		return false
	}
	tl := s.trusted.Load()
	if tl == nil || !slices.Equal(tl.src, list) {
		prefixes, err := ParseTrusted(list)
		if err != nil {
			s.log.Warn("tcp front door: proxy_protocol.trusted unusable; no PROXY header is read", "err", err)
		}
		tl = &trustList{src: slices.Clone(list), prefixes: prefixes}
		s.trusted.Store(tl)
	}
	tcp, ok := peer.(*net.TCPAddr)
	if !ok {
		return false
	}
	a, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return false
	}
	a = a.Unmap()
	for _, p := range tl.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// errNoHeader is a trusted peer's connection that did not start with a
// PROXY header.
var errNoHeader = errors.New("tcpdoor: a trusted peer's connection did not start with a PROXY header")

// proxyHeaderBuffer is the read buffer of a PROXY header: a v1 header is
// at most 107 bytes; a v2 header's TLVs beyond this are refused.
const proxyHeaderBuffer = 4096

// readProxyHeader reads the PROXY header (v1 or v2) a trusted peer's
// connection nc must start with, within timeout. It returns the header and
// the bytes read past it (the client's first data, to be sent on before
// anything else is copied). A missing or malformed header is an error.
func readProxyHeader(nc net.Conn, timeout time.Duration, now time.Time) (*proxyproto.Header, []byte, error) {
	if err := nc.SetReadDeadline(now.Add(timeout)); err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(nc, proxyHeaderBuffer)
	h, err := proxyproto.Read(br)
	if err != nil {
		if errors.Is(err, proxyproto.ErrNoProxyProtocol) {
			return nil, nil, errNoHeader
		}
		return nil, nil, fmt.Errorf("tcpdoor: PROXY header: %w", err)
	}
	if err := nc.SetReadDeadline(time.Time{}); err != nil {
		return nil, nil, err
	}
	rest, _ := br.Peek(br.Buffered())
	return h, rest, nil
}

// proxyVersion is the PROXY protocol version of tcp.proxy_protocol.send
// (0: send none).
func proxyVersion(send string) byte {
	switch send {
	case "v1":
		return 1
	case "v2":
		return 2
	}
	return 0
}

// writeProxyHeader writes a PROXY header of version v to up saying the
// connection came from src to dst.
func writeProxyHeader(up io.Writer, v byte, src, dst net.Addr) error {
	h := proxyproto.HeaderProxyFromAddrs(v, src, dst)
	_, err := h.WriteTo(up)
	return err
}

// errUntrustedHeader ends a connection from an untrusted peer that began
// with a PROXY header while proxy_protocol.trusted names other peers: a
// client spoofing its address, or a load balancer missing from the list.
var errUntrustedHeader = errors.New("tcpdoor: an untrusted peer's connection began with a PROXY header")

// proxySigV1 and proxySigV2 begin a PROXY header of version 1 and 2.
var (
	proxySigV1 = []byte("PROXY ")
	proxySigV2 = []byte("\r\n\r\n\x00\r\nQUIT\n")
)

// untrustedHeader reports whether the first bytes b read from a client
// begin with a whole PROXY v1 or v2 signature. A signature split over
// the first two reads passes as data: fulcrum never reads an untrusted
// peer's header, and a replica reads only the first header of a
// connection, which is fulcrum's own when proxy_protocol.send is set.
func untrustedHeader(b []byte) bool {
	return bytes.HasPrefix(b, proxySigV1) || bytes.HasPrefix(b, proxySigV2)
}
