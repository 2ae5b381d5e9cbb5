package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Link types (https://www.tcpdump.org/linktypes.html).
const (
	linkNull     = 0
	linkEthernet = 1
	linkRawAlt   = 12 // DLT_RAW on most BSDs
	linkRawAlt2  = 14 // DLT_RAW on OpenBSD
	linkRaw      = 101
	linkLoop     = 108
	linkSLL      = 113
	linkSLL2     = 276
)

const (
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
	etherVLAN = 0x8100
	etherQinQ = 0x88a8
)

type segment struct {
	key     string
	seq     uint32
	syn     bool
	payload []byte
}

// decodePacket strips the link, IP and TCP headers; it returns nil for
// packets that are not TCP.
func decodePacket(linkType uint32, p []byte) (*segment, error) {
	var ip []byte
	switch linkType {
	case linkNull, linkLoop:
		if len(p) < 4 {
			return nil, errors.New("loopback header cut short")
		}
		// The family is in the capturing host's byte order for null, network
		// order for loop; AF_INET is 2 everywhere, AF_INET6 is 10, 24, 28 or 30.
		fam := binary.LittleEndian.Uint32(p)
		if linkType == linkLoop || fam > 0xffff {
			fam = binary.BigEndian.Uint32(p)
		}
		ip = p[4:]
		if fam != 2 && fam != 10 && fam != 24 && fam != 28 && fam != 30 {
			return nil, nil
		}
	case linkEthernet:
		if len(p) < 14 {
			return nil, errors.New("Ethernet header cut short")
		}
		et, rest := binary.BigEndian.Uint16(p[12:]), p[14:]
		for et == etherVLAN || et == etherQinQ {
			if len(rest) < 4 {
				return nil, errors.New("VLAN tag cut short")
			}
			et, rest = binary.BigEndian.Uint16(rest[2:]), rest[4:]
		}
		if et != etherIPv4 && et != etherIPv6 {
			return nil, nil
		}
		ip = rest
	case linkRaw, linkRawAlt, linkRawAlt2:
		ip = p
	case linkSLL:
		if len(p) < 16 {
			return nil, errors.New("Linux cooked header cut short")
		}
		ip = p[16:]
	case linkSLL2:
		if len(p) < 20 {
			return nil, errors.New("Linux cooked v2 header cut short")
		}
		ip = p[20:]
	default:
		return nil, fmt.Errorf("link type %d not supported", linkType)
	}
	if len(ip) == 0 {
		return nil, nil
	}
	switch ip[0] >> 4 {
	case 4:
		return decodeIPv4(ip)
	case 6:
		return decodeIPv6(ip)
	}
	return nil, nil
}

func decodeIPv4(ip []byte) (*segment, error) {
	if len(ip) < 20 {
		return nil, errors.New("IPv4 header cut short")
	}
	ihl, total := int(ip[0]&0x0f)*4, int(binary.BigEndian.Uint16(ip[2:]))
	if ihl < 20 || total < ihl || total > len(ip) {
		return nil, fmt.Errorf("IPv4 header length %d, total length %d, %d bytes captured", ihl, total, len(ip))
	}
	if frag := binary.BigEndian.Uint16(ip[6:]); frag&0x3fff != 0 {
		return nil, errors.New("fragmented IPv4 packet")
	}
	if ip[9] != 6 {
		return nil, nil
	}
	src, _ := netip.AddrFromSlice(ip[12:16])
	dst, _ := netip.AddrFromSlice(ip[16:20])
	return decodeTCP(src, dst, ip[ihl:total])
}

func decodeIPv6(ip []byte) (*segment, error) {
	if len(ip) < 40 {
		return nil, errors.New("IPv6 header cut short")
	}
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	if 40+plen > len(ip) {
		return nil, fmt.Errorf("IPv6 payload length %d, %d bytes captured", plen, len(ip)-40)
	}
	src, _ := netip.AddrFromSlice(ip[8:24])
	dst, _ := netip.AddrFromSlice(ip[24:40])
	next, rest := ip[6], ip[40:40+plen]
	for {
		switch next {
		case 6:
			return decodeTCP(src, dst, rest)
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(rest) < 8 || len(rest) < 8+int(rest[1])*8 {
				return nil, errors.New("IPv6 extension header cut short")
			}
			next, rest = rest[0], rest[8+int(rest[1])*8:]
		case 44:
			return nil, errors.New("fragmented IPv6 packet")
		default:
			return nil, nil
		}
	}
}

func decodeTCP(src, dst netip.Addr, t []byte) (*segment, error) {
	if len(t) < 20 {
		return nil, errors.New("TCP header cut short")
	}
	doff := int(t[12]>>4) * 4
	if doff < 20 || doff > len(t) {
		return nil, fmt.Errorf("TCP data offset %d in a %d-byte segment", doff, len(t))
	}
	sp, dp := binary.BigEndian.Uint16(t[0:]), binary.BigEndian.Uint16(t[2:])
	return &segment{
		key:     netip.AddrPortFrom(src, sp).String() + ">" + netip.AddrPortFrom(dst, dp).String(),
		seq:     binary.BigEndian.Uint32(t[4:]),
		syn:     t[13]&0x02 != 0,
		payload: t[doff:],
	}, nil
}
