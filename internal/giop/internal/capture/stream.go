package capture

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// flow collects one TCP direction's segments.
type flow struct {
	isn      uint32 // sequence number of the first data byte
	haveISN  bool
	segments []*segment
}

func (f *flow) add(s *segment) {
	if s.syn {
		f.isn, f.haveISN = s.seq+1, true
	}
	if len(s.payload) > 0 {
		f.segments = append(f.segments, s)
	}
}

// reassemble orders the segments by sequence number (modulo 2³²), drops
// retransmitted bytes and fails on a gap.
func (f *flow) reassemble() ([]byte, error) {
	if len(f.segments) == 0 {
		return nil, nil
	}
	isn := f.isn
	if !f.haveISN { // capture started mid-connection: the earliest segment starts it
		isn = f.segments[0].seq
		for _, s := range f.segments {
			if int32(s.seq-isn) < 0 {
				isn = s.seq
			}
		}
	}
	segs := append([]*segment(nil), f.segments...)
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].seq-isn < segs[j].seq-isn })
	var out []byte
	for _, s := range segs {
		rel := int(s.seq - isn)
		if rel > len(out) {
			return nil, fmt.Errorf("gap of %d bytes at stream offset %d (lost segment)", rel-len(out), len(out))
		}
		if end := rel + len(s.payload); end > len(out) {
			out = append(out, s.payload[len(out)-rel:]...)
		}
	}
	return out, nil
}

// split cuts a stream into GIOP messages by their headers' message_size.
func split(stream []byte) ([][]byte, error) {
	var msgs [][]byte
	for off := 0; off < len(stream); {
		if len(stream)-off < 12 {
			return nil, fmt.Errorf("%d trailing bytes at offset %d, short of a GIOP header", len(stream)-off, off)
		}
		h := stream[off:]
		if string(h[:4]) != "GIOP" {
			return nil, fmt.Errorf("no GIOP magic at stream offset %d", off)
		}
		size := binary.BigEndian.Uint32(h[8:])
		if h[6]&1 == 1 {
			size = binary.LittleEndian.Uint32(h[8:])
		}
		if uint64(size) > uint64(len(h)-12) {
			return nil, fmt.Errorf("message at stream offset %d needs %d bytes, %d captured", off, size, len(h)-12)
		}
		n := 12 + int(size)
		msgs = append(msgs, h[:n:n])
		off += n
	}
	return msgs, nil
}
