package giop

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Encodings worked out by hand from the spec, one per alignment rule.
var goldens = []struct {
	name  string
	msg   Message
	bytes []byte
}{
	{
		// 1.0: the 3 bytes after response_expected are padding before the
		// key's length; the body follows the principal without re-alignment.
		name: "GIOP 1.0 big-endian Request",
		msg: &Request{Envelope: Envelope{Version: V10}, RequestID: 5, ResponseFlags: FlagsTwoway,
			Target: KeyTarget([]byte("k")), Operation: "op", Body: []byte{0, 0, 0, 7}, BodyOffset: 44},
		bytes: cat(
			[]byte("GIOP\x01\x00\x00\x00"), []byte{0, 0, 0, 36},
			[]byte{0, 0, 0, 0},                 // 12 service_context: none
			[]byte{0, 0, 0, 5},                 // 16 request_id
			[]byte{1, 0, 0, 0},                 // 20 response_expected, padding
			[]byte{0, 0, 0, 1, 'k', 0, 0, 0},   // 24 object_key, padding
			[]byte{0, 0, 0, 3, 'o', 'p', 0, 0}, // 32 operation, padding
			[]byte{0, 0, 0, 0},                 // 40 requesting_principal
			[]byte{0, 0, 0, 7},                 // 44 body: long 7
		),
	},
	{
		// 1.2: the target is a union on a short, padded before the key's
		// length; the body is 8-aligned after the service contexts.
		name: "GIOP 1.2 little-endian Request",
		msg: &Request{Envelope: Envelope{Version: V12, Order: cdr.LittleEndian}, RequestID: 1, ResponseFlags: FlagsTwoway,
			Target: KeyTarget([]byte("ab")), Operation: "is_prime", Body: []byte{3, 0, 0, 0}, BodyOffset: 56},
		bytes: cat(
			[]byte("GIOP\x01\x02\x01\x00"), []byte{48, 0, 0, 0},
			[]byte{1, 0, 0, 0},                                          // 12 request_id
			[]byte{3, 0, 0, 0},                                          // 16 response_flags, reserved
			[]byte{0, 0, 0, 0},                                          // 20 KeyAddr, padding
			[]byte{2, 0, 0, 0, 'a', 'b', 0, 0},                          // 24 object_key, padding
			[]byte{9, 0, 0, 0}, []byte("is_prime\x00"), []byte{0, 0, 0}, // 32 operation, padding
			[]byte{0, 0, 0, 0}, // 48 service_context: none
			[]byte{0, 0, 0, 0}, // 52 padding to 8
			[]byte{3, 0, 0, 0}, // 56 body: long 3
		),
	},
	{
		// A 1.2 LocateReply body is not re-aligned: the IOR starts at 20.
		// The profile is an encapsulation that aligns from its own start.
		name: "GIOP 1.2 big-endian LocateReply OBJECT_FORWARD",
		msg: func() Message {
			m := &LocateReply{Envelope: Envelope{Version: V12}, RequestID: 9}
			m.SetForward(ior.IOR{TypeID: "IDL:A:1.0", Profiles: []ior.Profile{
				ior.IIOPProfile{Version: ior.V10, Host: "h", Port: 0x0102, ObjectKey: []byte("k")},
			}}, false)
			return m
		}(),
		bytes: cat(
			[]byte("GIOP\x01\x02\x00\x04"), []byte{0, 0, 0, 53},
			[]byte{0, 0, 0, 9},                                         // 12 request_id
			[]byte{0, 0, 0, 2},                                         // 16 OBJECT_FORWARD
			[]byte{0, 0, 0, 10}, []byte("IDL:A:1.0\x00"), []byte{0, 0}, // 20 type_id, padding
			[]byte{0, 0, 0, 1},         // 36 one profile
			[]byte{0, 0, 0, 0},         // 40 TAG_INTERNET_IOP
			[]byte{0, 0, 0, 17},        // 44 profile_data length
			[]byte{0, 1, 0, 0},         // 48 big-endian, IIOP 1.0, padding (inner 0..3)
			[]byte{0, 0, 0, 2, 'h', 0}, // inner 4 host
			[]byte{1, 2},               // inner 10 port
			[]byte{0, 0, 0, 1, 'k'},    // inner 12 object_key
		),
	},
	{
		name:  "GIOP 1.1 little-endian Fragment",
		msg:   &Fragment{Envelope: Envelope{Version: V11, Order: cdr.LittleEndian, MoreFragments: true}, Body: []byte{9, 9}},
		bytes: cat([]byte("GIOP\x01\x01\x03\x07"), []byte{2, 0, 0, 0}, []byte{9, 9}),
	},
	{
		name:  "GIOP 1.2 big-endian Fragment",
		msg:   &Fragment{Envelope: Envelope{Version: V12}, RequestID: 4, Body: []byte{9}},
		bytes: cat([]byte("GIOP\x01\x02\x00\x07"), []byte{0, 0, 0, 5}, []byte{0, 0, 0, 4, 9}),
	},
	{
		name:  "GIOP 1.2 MessageError",
		msg:   &MessageError{Envelope: Envelope{Version: V12}},
		bytes: []byte("GIOP\x01\x02\x00\x06\x00\x00\x00\x00"),
	},
}

func TestGoldenEncodings(t *testing.T) {
	t.Parallel()
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			got, err := EncodeMessage(g.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, g.bytes) {
				t.Fatalf("encoding\n got % x\nwant % x", got, g.bytes)
			}
			m, err := DecodeMessage(g.bytes)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m, g.msg) {
				t.Fatalf("decoding\n got %#v\nwant %#v", m, g.msg)
			}
		})
	}
}
