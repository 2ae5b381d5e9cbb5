package ior_test

import (
	"encoding/hex"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/internal/capture"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// capturedIORs returns the IORs forwarded in the capture files: omniORB's
// (little-endian, IIOP 1.2, ORB type and code sets) and JacORB's
// (big-endian, key "PrimeSrv/PrimePOA/Prime", two conversion code sets).
func capturedIORs(t testing.TB) []ior.IOR {
	t.Helper()
	files, err := filepath.Glob("../testdata/captures/*.pcap")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	var out []ior.IOR
	for _, f := range files {
		msgs, err := capture.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range msgs {
			m, err := giop.DecodeMessage(cm.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			var ref ior.IOR
			switch m := m.(type) {
			case *giop.Reply:
				if m.Status != giop.StatusLocationForward {
					continue
				}
				ref, err = m.Forward()
			case *giop.LocateReply:
				if m.Status != giop.LocateObjectForward {
					continue
				}
				ref, err = m.Forward()
			default:
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ref)
		}
	}
	if len(out) < 4 {
		t.Fatalf("only %d forward IORs in the captures", len(out))
	}
	return out
}

// sample has two IIOP profiles (1.2 little-endian with components of every
// decoded kind and an opaque one, 1.0 big-endian) and an opaque profile.
var sample = ior.IOR{
	TypeID: "IDL:Prime:1.0",
	Profiles: []ior.Profile{
		ior.IIOPProfile{Order: cdr.LittleEndian, Version: ior.V12, Host: "fe80::1", Port: 2809, ObjectKey: []byte("\x00\xffPOA/oid"),
			Components: []ior.Component{
				ior.ORBType{ID: ior.ORBTypeTAO},
				ior.CodeSets{Order: cdr.LittleEndian, Char: ior.CodeSet{Native: ior.CodeSetUTF8}, Wchar: ior.CodeSet{Native: ior.CodeSetUTF16, Conversion: []uint32{1, 2}}},
				ior.AlternateIIOPAddress{Order: cdr.LittleEndian, Host: "backup", Port: 2810},
				ior.OpaqueComponent{ID: ior.TagSSLSecTrans, Data: []byte{0, 0, 0, 0, 0, 0, 0, 0x66, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x11}},
			}},
		ior.IIOPProfile{Version: ior.V10, Host: "10.1.2.3", Port: 1, ObjectKey: []byte("k")},
		ior.OpaqueProfile{ID: ior.TagMultipleComponents, Data: []byte{1, 0, 0, 0, 0, 0, 0, 0}},
	},
}

func TestStringifiedRoundTrip(t *testing.T) {
	t.Parallel()
	refs := append(capturedIORs(t), sample, ior.IOR{}, ior.IOR{TypeID: "IDL:omg.org/CORBA/Object:1.0"})
	for i, ref := range refs {
		for _, o := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
			s := ref.Stringify(o)
			if !strings.HasPrefix(s, "IOR:0"+string("01"[o])) {
				t.Fatalf("%d: %s does not start with its byte order", i, s)
			}
			for _, variant := range []string{s, "ior:" + strings.ToUpper(s[4:]), " \n" + s + "\r\n"} {
				got, err := ior.ParseStringified(variant)
				if err != nil {
					t.Fatalf("%d %v: %v", i, o, err)
				}
				if !reflect.DeepEqual(got, ref) {
					t.Fatalf("%d %v: round trip\n got %#v\nwant %#v", i, o, got, ref)
				}
			}
		}
	}
}

// TestOpaqueKeptExactly: profiles and components the package does not
// decode come back byte for byte, even when they are not valid CDR.
func TestOpaqueKeptExactly(t *testing.T) {
	t.Parallel()
	e := cdr.NewEncoder(nil, cdr.BigEndian, 0)
	e.Octet(0)
	e.String("IDL:X:1.0")
	e.ULong(2)
	e.ULong(0x54414f01)                 // a TAO-specific profile
	e.OctetSeq([]byte{9, 8, 7, 6, 5})   // not even an encapsulation
	e.ULong(uint32(ior.TagInternetIOP)) // IIOP 1.1 with an unknown component
	e.Encapsulation(cdr.BigEndian, func(e *cdr.Encoder) {
		e.Octet(1)
		e.Octet(1)
		e.String("h")
		e.UShort(7)
		e.OctetSeq([]byte("key"))
		e.ULong(1)
		e.ULong(0x12345678)
		e.OctetSeq([]byte{0xff, 0xfe, 0xfd})
	})
	s := "IOR:" + hex.EncodeToString(e.Bytes())
	ref, err := ior.ParseStringified(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := ref.Stringify(cdr.BigEndian); got != s {
		t.Fatalf("re-stringified\n%s\nwant\n%s", got, s)
	}
	p := ref.Profiles[1].(ior.IIOPProfile)
	if c := p.Components[0].(ior.OpaqueComponent); c.ID != 0x12345678 || string(c.Data) != "\xff\xfe\xfd" {
		t.Fatalf("component %+v", c)
	}
}

func TestParseStringifiedErrors(t *testing.T) {
	t.Parallel()
	ok := sample.String()
	body, _ := hex.DecodeString(ok[4:])
	hexOf := func(b []byte) string { return "IOR:" + hex.EncodeToString(b) }
	// build stringifies a big-endian encapsulation whose IOR write encodes.
	build := func(write func(e *cdr.Encoder)) string {
		e := cdr.NewEncoder(nil, cdr.BigEndian, 0)
		e.Octet(0)
		write(e)
		return hexOf(e.Bytes())
	}
	tests := []struct{ name, in, want string }{
		{"no prefix", ok[4:], `ior: stringified reference must start with "IOR:"`},
		{"empty", "IOR:", "ior: stringified IOR is empty (no byte-order octet)"},
		{"odd digits", ok[:len(ok)-1], "ior: stringified IOR has an odd number (471) of hex digits"},
		{"not hex", "IOR:00zz", "ior: stringified IOR: encoding/hex: invalid byte: U+007A 'z'"},
		{"byte order 2", "IOR:02", "ior: stringified IOR: byte-order octet 2, want 0 or 1"},
		{"truncated", hexOf(body[:40]), "ior: stringified IOR: cdr: ior.profiles at offset 24: 3 elements of at least 8 bytes exceed the 12 bytes left"},
		{"trailing bytes", hexOf(append(append([]byte{}, body...), 0)), "ior: stringified IOR: cdr: ior at offset 236: 1 bytes left after ior"},
		{"profile count beyond the data", build(func(e *cdr.Encoder) { e.String(""); e.ULong(0xffffffff) }),
			"ior: stringified IOR: cdr: ior.profiles at offset 12: 4294967295 elements of at least 8 bytes exceed the 0 bytes left"},
		{"type id of length 0", build(func(e *cdr.Encoder) { e.ULong(0); e.ULong(0) }),
			"ior: stringified IOR: cdr: ior.type_id at offset 4: string length 0 (the length must count the terminating NUL)"},
		{"IIOP 2.0", build(func(e *cdr.Encoder) {
			e.String("")
			e.ULong(1)
			e.ULong(uint32(ior.TagInternetIOP))
			e.Encapsulation(cdr.BigEndian, func(e *cdr.Encoder) { e.Octet(2); e.Octet(0) })
		}), "ior: stringified IOR: cdr: iiop.iiop_version at offset 25: IIOP version 2.0, want 1.x"},
		{"IIOP 1.0 with components", build(func(e *cdr.Encoder) {
			e.String("")
			e.ULong(1)
			e.ULong(uint32(ior.TagInternetIOP))
			e.Encapsulation(cdr.BigEndian, func(e *cdr.Encoder) {
				e.Octet(1)
				e.Octet(0)
				e.String("h")
				e.UShort(1)
				e.OctetSeq([]byte("k"))
				e.ULong(0) // a component count IIOP 1.0 does not have
			})
		}), "ior: stringified IOR: cdr: profile.profile_data at offset 41: 7 bytes left unread at the end of the encapsulation"},
		{"ORB type component too short", build(func(e *cdr.Encoder) {
			e.String("")
			e.ULong(1)
			e.ULong(uint32(ior.TagInternetIOP))
			e.Encapsulation(cdr.BigEndian, func(e *cdr.Encoder) {
				e.Octet(1)
				e.Octet(2)
				e.String("h")
				e.UShort(1)
				e.OctetSeq([]byte("k"))
				e.ULong(1)
				e.ULong(uint32(ior.TagORBType))
				e.OctetSeq([]byte{0, 0x41})
			})
		}), "ior: stringified IOR: cdr: orb_type at offset 57: 3 bytes of alignment padding needed, 1 left"},
		{"code sets with a huge conversion list", build(func(e *cdr.Encoder) {
			e.String("")
			e.ULong(1)
			e.ULong(uint32(ior.TagInternetIOP))
			e.Encapsulation(cdr.LittleEndian, func(e *cdr.Encoder) {
				e.Octet(1)
				e.Octet(1)
				e.String("h")
				e.UShort(1)
				e.OctetSeq([]byte("k"))
				e.ULong(1)
				e.ULong(uint32(ior.TagCodeSets))
				e.Encapsulation(cdr.BigEndian, func(e *cdr.Encoder) { e.ULong(1); e.ULong(1 << 28) })
			})
		}), "ior: stringified IOR: cdr: code_sets.ForCharData.conversion_code_sets at offset 64: 268435456 elements of at least 4 bytes exceed the 0 bytes left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ior.ParseStringified(tt.in)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error\n%v, want\n%s", err, tt.want)
			}
		})
	}
}

func TestWithAddress(t *testing.T) {
	t.Parallel()
	got := sample.WithAddress("agent.local", 4100)
	if got.TypeID != sample.TypeID || len(got.Profiles) != 2 {
		t.Fatalf("%+v", got)
	}
	for i, p := range got.Profiles {
		ip := p.(ior.IIOPProfile)
		orig := sample.Profiles[i].(ior.IIOPProfile)
		if ip.Host != "agent.local" || ip.Port != 4100 || string(ip.ObjectKey) != string(orig.ObjectKey) || ip.Version != orig.Version {
			t.Errorf("profile %d: %+v", i, ip)
		}
		for _, c := range ip.Components {
			if c.Tag() == ior.TagAlternateIIOPAddress {
				t.Errorf("profile %d keeps an alternate address", i)
			}
		}
	}
	if n := len(got.Profiles[0].(ior.IIOPProfile).Components); n != 3 {
		t.Errorf("%d components left, want 3", n)
	}
	// The original is untouched.
	if sample.Profiles[0].(ior.IIOPProfile).Host != "fe80::1" || len(sample.Profiles[0].(ior.IIOPProfile).Components) != 4 {
		t.Error("WithAddress modified its receiver")
	}
}

func TestIIOPAndIsNil(t *testing.T) {
	t.Parallel()
	if !(ior.IOR{TypeID: "IDL:X:1.0"}).IsNil() || sample.IsNil() {
		t.Error("IsNil")
	}
	p, ok := sample.IIOP()
	if !ok || p.Address().String() != "1.2@[fe80::1]:2809" {
		t.Errorf("IIOP() = %+v, %v", p.Address(), ok)
	}
	if _, ok := (ior.IOR{Profiles: []ior.Profile{ior.OpaqueProfile{ID: 5}}}).IIOP(); ok {
		t.Error("IIOP() found a profile in an IOR without one")
	}
}
