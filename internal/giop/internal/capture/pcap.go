package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// readPcap returns the packets of a classic pcap file and its link type.
func readPcap(data []byte) ([][]byte, uint32, error) {
	if len(data) < 24 {
		return nil, 0, errors.New("pcap: file shorter than its global header")
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(data) {
	case 0xa1b2c3d4, 0xa1b23c4d: // microsecond, nanosecond timestamps
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	default:
		return nil, 0, fmt.Errorf("pcap: magic %#x is not classic pcap (pcapng is not supported)", binary.LittleEndian.Uint32(data))
	}
	if major := bo.Uint16(data[4:]); major != 2 {
		return nil, 0, fmt.Errorf("pcap: version %d.x, want 2.x", major)
	}
	linkType := bo.Uint32(data[20:]) & 0x0fffffff // upper bits: FCS info
	var packets [][]byte
	for off := 24; off < len(data); {
		if len(data)-off < 16 {
			return nil, 0, fmt.Errorf("pcap: record header at %d cut short", off)
		}
		incl, orig := int(bo.Uint32(data[off+8:])), int(bo.Uint32(data[off+12:]))
		off += 16
		if incl > len(data)-off {
			return nil, 0, fmt.Errorf("pcap: record at %d claims %d bytes, %d left", off-16, incl, len(data)-off)
		}
		if incl < orig {
			return nil, 0, fmt.Errorf("pcap: packet %d truncated by the snap length (%d of %d bytes)", len(packets)+1, incl, orig)
		}
		packets = append(packets, data[off:off+incl])
		off += incl
	}
	return packets, linkType, nil
}
