package capture

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// giopMsg builds a little-endian GIOP CloseConnection-shaped message with n
// body bytes of value fill.
func giopMsg(n int, fill byte) []byte {
	m := []byte{'G', 'I', 'O', 'P', 1, 2, 1, 5, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(m[8:], uint32(n))
	return append(m, bytes.Repeat([]byte{fill}, n)...)
}

type pkt struct {
	seq     uint32
	syn     bool
	payload []byte
}

func tcp(sport, dport uint16, p pkt) []byte {
	t := make([]byte, 20, 20+len(p.payload))
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], p.seq)
	t[12] = 5 << 4
	if p.syn {
		t[13] = 0x02
	}
	return append(t, p.payload...)
}

func ipv4(t []byte) []byte {
	h := make([]byte, 20)
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(t)))
	h[9] = 6
	copy(h[12:], []byte{127, 0, 0, 1})
	copy(h[16:], []byte{127, 0, 0, 1})
	return append(h, t...)
}

func ipv6(t []byte) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(t)))
	h[6] = 60 // a destination options header first
	h[39], h[23] = 1, 1
	opts := []byte{6, 0, 1, 4, 0, 0, 0, 0}
	return append(append(h, opts...), t...)
}

type link struct {
	name  string
	typ   uint32
	frame func(ip []byte, v6 bool) []byte
}

var links = []link{
	{"null", 0, func(ip []byte, v6 bool) []byte {
		fam := uint32(2)
		if v6 {
			fam = 30
		}
		return append(binary.LittleEndian.AppendUint32(nil, fam), ip...)
	}},
	{"ethernet+vlan", 1, func(ip []byte, v6 bool) []byte {
		et := uint16(0x0800)
		if v6 {
			et = 0x86dd
		}
		f := make([]byte, 12)
		f = binary.BigEndian.AppendUint16(f, 0x8100)
		f = append(f, 0, 7)
		f = binary.BigEndian.AppendUint16(f, et)
		return append(f, ip...)
	}},
	{"raw", 101, func(ip []byte, _ bool) []byte { return ip }},
	{"loop", 108, func(ip []byte, v6 bool) []byte {
		fam := uint32(2)
		if v6 {
			fam = 24
		}
		return append(binary.BigEndian.AppendUint32(nil, fam), ip...)
	}},
	{"sll", 113, func(ip []byte, _ bool) []byte { return append(make([]byte, 16), ip...) }},
	{"sll2", 276, func(ip []byte, _ bool) []byte { return append(make([]byte, 20), ip...) }},
}

func pcapFile(bo binary.AppendByteOrder, nano bool, linkType uint32, frames [][]byte) []byte {
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	f := bo.AppendUint32(nil, magic)
	f = bo.AppendUint16(f, 2)
	f = bo.AppendUint16(f, 4)
	f = append(f, make([]byte, 8)...)
	f = bo.AppendUint32(f, 65535)
	f = bo.AppendUint32(f, linkType)
	for _, fr := range frames {
		f = append(f, make([]byte, 8)...)
		f = bo.AppendUint32(f, uint32(len(fr)))
		f = bo.AppendUint32(f, uint32(len(fr)))
		f = append(f, fr...)
	}
	return f
}

func TestReadLinkTypesAndReassembly(t *testing.T) {
	t.Parallel()
	m1, m2, m3 := giopMsg(5, 0xa1), giopMsg(0, 0), giopMsg(30, 0xb2)
	stream := append(append(append([]byte{}, m1...), m2...), m3...)
	// The sequence numbers wrap around 2³² inside the stream.
	var isn uint32 = 0xfffffff0
	segs := []pkt{
		{seq: isn - 1, syn: true},
		{seq: isn + 20, payload: stream[20:40]}, // out of order
		{seq: isn, payload: stream[0:20]},
		{seq: isn + 10, payload: stream[10:30]}, // overlapping retransmission
		{seq: isn + 40, payload: stream[40:]},
	}
	for _, l := range links {
		for _, v6 := range []bool{false, true} {
			for _, bo := range []binary.AppendByteOrder{binary.LittleEndian, binary.BigEndian} {
				var frames [][]byte
				for _, s := range segs {
					ip := ipv4(tcp(40000, 2809, s))
					if v6 {
						ip = ipv6(tcp(40000, 2809, s))
					}
					frames = append(frames, l.frame(ip, v6))
				}
				msgs, err := Read(pcapFile(bo, v6, l.typ, frames))
				if err != nil {
					t.Fatalf("%s v6=%v %v: %v", l.name, v6, bo, err)
				}
				if len(msgs) != 3 || !bytes.Equal(msgs[0].Bytes, m1) || !bytes.Equal(msgs[1].Bytes, m2) || !bytes.Equal(msgs[2].Bytes, m3) {
					t.Fatalf("%s v6=%v %v: got %d messages %v", l.name, v6, bo, len(msgs), msgs)
				}
				wantStream := "127.0.0.1:40000>127.0.0.1:2809"
				if v6 {
					wantStream = "[::1]:40000>[::1]:2809"
				}
				if msgs[2].Stream != wantStream || msgs[2].Index != 2 {
					t.Fatalf("%s: stream %q index %d", l.name, msgs[2].Stream, msgs[2].Index)
				}
			}
		}
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	m := giopMsg(40, 1)
	frame := func(p pkt) []byte { return ipv4(tcp(1, 2, p)) }
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"pcapng", []byte("\x0a\x0d\x0d\x0a" + strings.Repeat("\x00", 40)), "pcapng is not supported"},
		{"gap", pcapFile(binary.LittleEndian, false, 101, [][]byte{
			frame(pkt{seq: 99, syn: true}), frame(pkt{seq: 100, payload: m[:10]}), frame(pkt{seq: 120, payload: m[20:]}),
		}), "gap of 10 bytes at stream offset 10"},
		{"cut message", pcapFile(binary.LittleEndian, false, 101, [][]byte{
			frame(pkt{seq: 100, payload: m[:30]}),
		}), "needs 40 bytes, 18 captured"},
		{"not GIOP", pcapFile(binary.LittleEndian, false, 101, [][]byte{
			frame(pkt{seq: 100, payload: []byte("GET / HTTP/1.1\r\n")}),
		}), "no GIOP magic"},
		{"unknown link type", pcapFile(binary.LittleEndian, false, 147, [][]byte{{0}}), "link type 147 not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Read(tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
