package giop

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// TestBodyAlignment builds requests whose bodies start at every offset
// modulo 8 and checks that values inside the body align relative to the
// message start: 8 for 1.2 bodies, wherever the header ends for 1.0/1.1.
func TestBodyAlignment(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		for _, o := range orders {
			starts := map[int]bool{}
			// In 1.0 and 1.1 the body follows requesting_principal, an octet
			// sequence, so its length sets where the body starts.
			for n := range 8 {
				name := fmt.Sprintf("%v %v length %d", v, o, n)
				r := &Request{Envelope: Envelope{Version: v, Order: o}, RequestID: 1, ResponseFlags: FlagsTwoway,
					Target: KeyTarget(bytes.Repeat([]byte{'k'}, n+1)), Operation: "op"}
				if v != V12 {
					r.Target = KeyTarget([]byte("k"))
					if n > 0 {
						r.Principal = bytes.Repeat([]byte{'p'}, n)
					}
				}
				r.SetBody(func(e *cdr.Encoder) {
					e.Octet(0xee)
					e.ULongLong(0x0102030405060708)
					e.Long(-9)
				})
				if v == V12 && r.BodyOffset%8 != 0 {
					t.Fatalf("%s: 1.2 body at %d, not 8-aligned", name, r.BodyOffset)
				}
				starts[r.BodyOffset%8] = true
				// The long long sits on an 8-byte boundary of the message.
				llAt := r.BodyOffset + 1 + cdr.Padding(r.BodyOffset+1, 8)
				b, err := EncodeMessage(r)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if llAt%8 != 0 || o.Uint64(b[llAt:]) != 0x0102030405060708 {
					t.Fatalf("%s: long long not at message offset %d\n% x", name, llAt, b)
				}
				m, err := DecodeMessage(b)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				d := m.(*Request).BodyDecoder()
				d.Octet("a")
				ll, l := d.ULongLong("b"), d.Long("c")
				d.Done("c")
				if d.Err() != nil || ll != 0x0102030405060708 || l != -9 {
					t.Fatalf("%s: decoded %#x %d %v", name, ll, l, d.Err())
				}
			}
			if v != V12 && len(starts) != 8 {
				t.Errorf("%v %v: bodies started at only %v modulo 8", v, o, starts)
			}
		}
	}
}

// TestBodyMovesWithHeader checks what happens to a raw body when a proxy
// changes the header in front of it.
func TestBodyMovesWithHeader(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		r := &Request{Envelope: Envelope{Version: v}, RequestID: 1, ResponseFlags: FlagsTwoway, Target: KeyTarget([]byte("key")), Operation: "op"}
		r.SetLongArg(42)
		for _, grow := range []int{1, 4, 8, 16} {
			moved := *r
			if v == V12 {
				moved.Target = KeyTarget(bytes.Repeat([]byte("k"), 3+grow))
			} else {
				moved.Principal = bytes.Repeat([]byte("p"), grow)
			}
			_, err := EncodeMessage(&moved)
			switch {
			case v == V12 || grow%8 == 0:
				if err != nil {
					t.Errorf("%v key +%d: %v", v, grow, err)
				}
			case !errors.Is(err, ErrBodyMisaligned):
				t.Errorf("%v key +%d: error %v, want ErrBodyMisaligned", v, grow, err)
			}
		}
		// Rebuilding the body after the header change always works.
		moved := *r
		moved.Target = KeyTarget([]byte("longer key"))
		moved.SetLongArg(42)
		b, err := EncodeMessage(&moved)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		m, _ := DecodeMessage(b)
		if n, err := m.(*Request).LongArg(); err != nil || n != 42 {
			t.Fatalf("%v: %d, %v", v, n, err)
		}
	}
}

// TestPaddedEmptyBody: a GIOP 1.2 sender may pad to 8 even when there is no
// body. Decoding keeps that fact so re-encoding gives the same bytes; a
// message that stops inside the padding decodes too.
func TestPaddedEmptyBody(t *testing.T) {
	t.Parallel()
	r := &Reply{Envelope: Envelope{Version: V12, Order: cdr.LittleEndian}, RequestID: 1,
		ServiceContexts: []ServiceContext{{ID: 1, Data: []byte{1, 2, 3, 4}}}} // header ends at 36
	bare, err := EncodeMessage(r)
	if err != nil || len(bare) != 36 {
		t.Fatalf("%d bytes, %v", len(bare), err)
	}
	for _, pad := range []int{4, 2} {
		b := append(append([]byte{}, bare...), make([]byte, pad)...)
		b[8] = byte(len(b) - HeaderSize)
		m, err := DecodeMessage(b)
		if err != nil {
			t.Fatalf("pad %d: %v", pad, err)
		}
		got := m.(*Reply)
		if got.Body != nil || got.BodyOffset != 40 {
			t.Fatalf("pad %d: body %v at %d", pad, got.Body, got.BodyOffset)
		}
		again, err := EncodeMessage(got)
		if err != nil || len(again) != 40 {
			t.Fatalf("pad %d: re-encoded to %d bytes, %v", pad, len(again), err)
		}
	}
	m, err := DecodeMessage(bare)
	if err != nil || m.(*Reply).BodyOffset != 0 {
		t.Fatalf("unpadded: %+v, %v", m, err)
	}
}

func TestSystemException(t *testing.T) {
	t.Parallel()
	x := ObjectNotExist(OMGVMCID|2, CompletedNo)
	if x.RepositoryID != "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0" || x.Name() != "OBJECT_NOT_EXIST" {
		t.Fatalf("%+v %q", x, x.Name())
	}
	if got := Transient(0, CompletedMaybe).Error(); got != "CORBA::TRANSIENT (minor 0x0, COMPLETED_MAYBE)" {
		t.Fatalf("Error() = %q", got)
	}
	if got := (SystemException{RepositoryID: "IDL:omg.org/CORBA/COMM_FAILURE:1.0", Minor: OMGVMCID | 3}).Error(); got != "CORBA::COMM_FAILURE (minor 0x4f4d0003, COMPLETED_YES)" {
		t.Fatalf("Error() = %q", got)
	}
	r := &Reply{Envelope: Envelope{Version: V10}, Status: StatusSystemException}
	r.SetBody(func(e *cdr.Encoder) { e.String(RepoIDTransient); e.ULong(1); e.ULong(3) })
	if _, err := r.SystemException(); err == nil || err.Error() != "giop: system exception: cdr: completion_status at offset 64: unknown completion status 3" {
		t.Fatalf("error %v", err)
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	for got, want := range map[fmt.Stringer]string{
		MsgLocateReply:            "LocateReply",
		MsgType(9):                "MsgType(9)",
		StatusLocationForwardPerm: "LOCATION_FORWARD_PERM",
		ReplyStatus(6):            "ReplyStatus(6)",
		LocateObjectForward:       "OBJECT_FORWARD",
		LocateStatus(9):           "LocateStatus(9)",
		CompletedNo:               "COMPLETED_NO",
		ReferenceAddr:             "ReferenceAddr",
		V11:                       "1.1",
	} {
		if got.String() != want {
			t.Errorf("%#v.String() = %q, want %q", got, got.String(), want)
		}
	}
}
