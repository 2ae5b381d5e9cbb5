package giop

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// msg builds a big-endian message of the given version and type around
// body, with message_size set to len(body).
func msg(major, minor, flags, typ byte, body ...byte) []byte {
	b := []byte{'G', 'I', 'O', 'P', major, minor, flags, typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[8:], uint32(len(body)))
	return append(b, body...)
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	huge := msg(1, 2, 0, 0)
	binary.BigEndian.PutUint32(huge[8:], DefaultMaxMessageSize+1)
	big := msg(1, 2, 0, 5)
	binary.BigEndian.PutUint32(big[8:], 101)

	tests := []struct {
		name   string
		in     []byte
		limits Limits
		want   error
		msg    string // the whole message, or a substring if it starts with "…"
	}{
		{"empty", nil, Limits{}, ErrMalformed, "giop: malformed message: header: need 12 bytes, have 0"},
		{"short header", []byte("GIOP\x01\x02"), Limits{}, ErrMalformed, "giop: malformed message: header: need 12 bytes, have 6"},
		{"HTTP", []byte("GET / HTTP/1.1\r\n"), Limits{}, ErrBadMagic, `giop: bad magic: "GET " at offset 0, want "GIOP"`},
		{"lower case magic", msg(1, 2, 0, 5)[:0:0], Limits{}, ErrMalformed, "…need 12 bytes"},
		{"giop lower case", append([]byte("giop"), msg(1, 2, 0, 5)[4:]...), Limits{}, ErrBadMagic, `giop: bad magic: "giop" at offset 0, want "GIOP"`},
		{"GIOP 1.3", msg(1, 3, 0, 5), Limits{}, ErrVersion, "giop: unsupported GIOP version: 1.3 at offset 4"},
		{"GIOP 2.0", msg(2, 0, 0, 5), Limits{}, ErrVersion, "giop: unsupported GIOP version: 2.0 at offset 4"},
		{"GIOP 0.9", msg(0, 9, 0, 5), Limits{}, ErrVersion, "giop: unsupported GIOP version: 0.9 at offset 4"},
		{"1.0 byte_order 2", msg(1, 0, 2, 5), Limits{}, ErrMalformed, "giop: malformed message: byte_order 2 at offset 6, want 0 or 1"},
		{"1.1 reserved flag", msg(1, 1, 4, 5), Limits{}, ErrMalformed, "giop: malformed message: flags 0x04 at offset 6: reserved bits set"},
		{"Fragment in 1.0", msg(1, 0, 0, 7), Limits{}, ErrMalformed, "giop: malformed message: message_type 7 at offset 7: unknown in GIOP 1.0"},
		{"type 8", msg(1, 2, 0, 8), Limits{}, ErrMalformed, "giop: malformed message: message_type 8 at offset 7: unknown in GIOP 1.2"},
		{"fragmented CancelRequest", msg(1, 2, 2, 2, 0, 0, 0, 1), Limits{}, ErrMalformed, "giop: malformed message: more-fragments flag on a GIOP 1.2 CancelRequest"},
		{"fragmented 1.1 LocateRequest", msg(1, 1, 2, 3), Limits{}, ErrMalformed, "giop: malformed message: more-fragments flag on a GIOP 1.1 LocateRequest"},
		{"over 16 MiB", huge, Limits{}, ErrTooLarge, "giop: message too large: message_size 16777217 at offset 8 exceeds the limit of 16777216"},
		{"over a configured limit", big, Limits{MaxMessageSize: 100}, ErrTooLarge, "giop: message too large: message_size 101 at offset 8 exceeds the limit of 100"},
		{"size says more", msg(1, 2, 0, 2, 0, 0, 0, 1)[:14], Limits{}, ErrMalformed, "giop: malformed message: message_size 4 at offset 8 but 2 bytes follow the header"},
		{"size says less", append(msg(1, 2, 0, 5), 0), Limits{}, ErrMalformed, "giop: malformed message: message_size 0 at offset 8 but 1 bytes follow the header"},
		{"CancelRequest cut short", msg(1, 2, 0, 2, 0, 0), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 CancelRequest: cdr: request_id at offset 12: need 4 bytes, 2 left"},
		{"CancelRequest with extra bytes", msg(1, 2, 0, 2, 0, 0, 0, 1, 9), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 CancelRequest: cdr: request_id at offset 16: 1 bytes left after request_id"},
		{"CloseConnection with a body", msg(1, 0, 0, 5, 1), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.0 CloseConnection: cdr: header at offset 12: 1 bytes left after header"},
		{"1.0 Request: response_expected 2", msg(1, 0, 0, 0, cat(be32(0), be32(1), []byte{2})...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.0 Request: cdr: response_expected at offset 20: boolean octet 2, want 0 or 1"},
		{"1.0 Request: service contexts beyond the message", msg(1, 0, 0, 0, be32(1<<30)...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.0 Request: cdr: service_context at offset 12: 1073741824 elements of at least 8 bytes exceed the 0 bytes left"},
		{"1.2 Request: key longer than the message", msg(1, 2, 0, 0, cat(be32(1), []byte{3, 0, 0, 0}, []byte{0, 0, 0, 0}, be32(1000))...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 Request: cdr: target.object_key at offset 24: length 1000 exceeds the 0 bytes left"},
		{"1.2 Request: unknown disposition", msg(1, 2, 0, 0, cat(be32(1), []byte{3, 0, 0, 0}, []byte{0, 3})...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 Request: cdr: target.disposition at offset 20: unknown addressing disposition 3"},
		{"1.2 Request: operation without NUL", msg(1, 2, 0, 0, cat(be32(1), []byte{3, 0, 0, 0}, []byte{0, 0, 0, 0}, be32(0), be32(2), []byte("op"))...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 Request: cdr: operation at offset 28: string of length 2 does not end in NUL"},
		{"1.2 Request: ProfileAddr with IIOP 2.0", msg(1, 2, 0, 0, cat(be32(1), []byte{3, 0, 0, 0}, []byte{0, 1, 0, 0}, be32(0), be32(4), []byte{0, 2, 0, 0})...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 Request: cdr: iiop.iiop_version at offset 33: IIOP version 2.0, want 1.x"},
		{"1.2 Reply: status 6", msg(1, 2, 0, 1, cat(be32(1), be32(6), be32(0))...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 Reply: cdr: reply_status at offset 16: unknown reply status 6 in GIOP 1.2"},
		{"1.1 Reply: LOCATION_FORWARD_PERM", msg(1, 1, 0, 1, cat(be32(0), be32(1), be32(4))...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.1 Reply: cdr: reply_status at offset 20: unknown reply status 4 in GIOP 1.1"},
		{"1.0 LocateReply: LOC_SYSTEM_EXCEPTION", msg(1, 0, 0, 4, cat(be32(1), be32(4))...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.0 LocateReply: cdr: locate_status at offset 16: unknown locate status 4 in GIOP 1.0"},
		{"1.2 LocateRequest with extra bytes", msg(1, 2, 0, 3, cat(be32(1), []byte{0, 0, 0, 0}, be32(1), []byte{'k', 0})...), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 LocateRequest: cdr: target at offset 25: 1 bytes left after target"},
		{"1.2 Fragment without its request id", msg(1, 2, 0, 7, 0, 0), Limits{}, ErrMalformed,
			"giop: malformed message: GIOP 1.2 Fragment: cdr: request_id at offset 12: need 4 bytes, 2 left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.limits.DecodeMessage(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if sub, ok := strings.CutPrefix(tt.msg, "…"); ok {
				if !strings.Contains(err.Error(), sub) {
					t.Fatalf("error %q, want it to contain %q", err, sub)
				}
			} else if err.Error() != tt.msg {
				t.Fatalf("error\n%q, want\n%q", err, tt.msg)
			}
			// Errors from the body carry the cdr error with field and offset.
			if strings.Contains(tt.msg, "cdr:") {
				var ce *cdr.Error
				if !errors.As(err, &ce) || ce.Field == "" {
					t.Fatalf("no *cdr.Error in %v", err)
				}
			}
		})
	}
}

func TestParseHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []byte
		want Header
	}{
		{msg(1, 0, 0, 0, 1, 2), Header{Version: V10, Type: MsgRequest, Size: 2}},
		{msg(1, 0, 1, 6), Header{Version: V10, Order: cdr.LittleEndian, Type: MsgMessageError}},
		{msg(1, 1, 2, 1), Header{Version: V11, MoreFragments: true, Type: MsgReply}},
		{[]byte("GIOP\x01\x02\x03\x03\x05\x00\x00\x00"), Header{Version: V12, Order: cdr.LittleEndian, MoreFragments: true, Type: MsgLocateRequest, Size: 5}},
		{msg(1, 2, 2, 7), Header{Version: V12, MoreFragments: true, Type: MsgFragment}},
	}
	for _, tt := range tests {
		got, err := ParseHeader(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseHeader(% x) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	// On error the header holds what was read: enough to answer in the
	// client's byte order.
	h, err := ParseHeader(msg(1, 9, 1, 0))
	if !errors.Is(err, ErrVersion) || h.Version != (Version{1, 9}) {
		t.Errorf("got %+v, %v", h, err)
	}
}

func TestEncodeErrors(t *testing.T) {
	t.Parallel()
	v10 := Envelope{Version: V10}
	v11 := Envelope{Version: V11}
	v12 := Envelope{Version: V12}
	profile := TargetAddress{Disposition: ProfileAddr, Profile: ior.OpaqueProfile{ID: 9}}
	tests := []struct {
		name string
		m    Message
		want error
		msg  string
	}{
		{"GIOP 1.3", &CloseConnection{Envelope: Envelope{Version: Version{1, 3}}}, ErrInvalid, "giop: invalid message: GIOP version 1.3"},
		{"byte order 2", &CloseConnection{Envelope: Envelope{Version: V12, Order: 2}}, ErrInvalid, "giop: invalid message: byte order 2"},
		{"Fragment in 1.0", &Fragment{Envelope: v10}, ErrInvalid, "giop: invalid message: no Fragment in GIOP 1.0"},
		{"fragmented CancelRequest", &CancelRequest{Envelope: Envelope{Version: V12, MoreFragments: true}}, ErrInvalid,
			"giop: invalid message: a GIOP 1.2 CancelRequest cannot be fragmented"},
		{"fragmented 1.0 Request", &Request{Envelope: Envelope{Version: V10, MoreFragments: true}}, ErrInvalid,
			"giop: invalid message: a GIOP 1.0 Request cannot be fragmented"},
		{"ProfileAddr in 1.1", &Request{Envelope: v11, Target: profile}, ErrInvalid, "giop: invalid message: GIOP 1.1 Request: a ProfileAddr target needs GIOP 1.2"},
		{"ReferenceAddr LocateRequest in 1.0", &LocateRequest{Envelope: v10, Target: TargetAddress{Disposition: ReferenceAddr}}, ErrInvalid,
			"giop: invalid message: GIOP 1.0 LocateRequest: a ReferenceAddr target needs GIOP 1.2"},
		{"ProfileAddr without a profile", &Request{Envelope: v12, Target: TargetAddress{Disposition: ProfileAddr}}, ErrInvalid,
			"giop: invalid message: GIOP 1.2 Request: ProfileAddr target without a profile"},
		{"unknown disposition", &LocateRequest{Envelope: v12, Target: TargetAddress{Disposition: 7}}, ErrInvalid,
			"giop: invalid message: GIOP 1.2 LocateRequest: unknown target disposition AddressingDisposition(7)"},
		{"principal in 1.2", &Request{Envelope: v12, Principal: []byte("me")}, ErrInvalid,
			"giop: invalid message: GIOP 1.2 Request: requesting_principal needs GIOP 1.0 or 1.1"},
		{"LOCATION_FORWARD_PERM in 1.1", &Reply{Envelope: v11, Status: StatusLocationForwardPerm}, ErrInvalid,
			"giop: invalid message: GIOP 1.1 Reply: reply status LOCATION_FORWARD_PERM in GIOP 1.1"},
		{"OBJECT_FORWARD_PERM in 1.0", &LocateReply{Envelope: v10, Status: LocateObjectForwardPerm}, ErrInvalid,
			"giop: invalid message: GIOP 1.0 LocateReply: locate status OBJECT_FORWARD_PERM in GIOP 1.0"},
		{"1.1 fragment with a request id", &Fragment{Envelope: v11, RequestID: 3}, ErrInvalid,
			"giop: invalid message: GIOP 1.1 Fragment: a fragment header with a request_id needs GIOP 1.2"},
		{"1.0 body built for another offset", &Request{Envelope: v10, Target: KeyTarget([]byte("abcd")), Operation: "op", Body: []byte{1, 0, 0, 0}, BodyOffset: 0}, ErrBodyMisaligned,
			"giop: body alignment would change: GIOP 1.0 Request: body encoded for offset 0 would start at 44"},
		{"negative body offset", &Reply{Envelope: v12, BodyOffset: -1}, ErrInvalid, "giop: invalid message: GIOP 1.2 Reply: negative BodyOffset -1"},
		{"1.2 body built for an offset not 8-aligned", &Reply{Envelope: v12, Body: []byte{1}, BodyOffset: 4}, ErrBodyMisaligned,
			"giop: body alignment would change: GIOP 1.2 Reply: body encoded for offset 4 would start at 24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := AppendMessage([]byte("kept"), tt.m)
			if !errors.Is(err, tt.want) || err.Error() != tt.msg {
				t.Fatalf("error\n%q, want\n%q", err, tt.msg)
			}
			if string(out) != "kept" {
				t.Fatalf("dst changed to %q", out)
			}
		})
	}
}
