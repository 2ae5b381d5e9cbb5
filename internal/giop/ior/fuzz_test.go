package ior_test

import (
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// FuzzParseIOR parses arbitrary input as a stringified IOR, twice: as text,
// and as the bytes of the encapsulation behind "IOR:" (which lets the fuzzer
// mutate the CDR rather than hex digits). It must never panic, and any IOR it
// accepts must stringify, in either byte order, to a string that parses to
// an equal value and list one endpoint per IIOP profile and alternate
// address.
func FuzzParseIOR(f *testing.F) {
	for _, ref := range append(capturedIORs(f), sample, ior.IOR{}) {
		for _, o := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
			s := ref.Stringify(o)
			f.Add([]byte(s))
			raw, _ := hex.DecodeString(s[4:])
			f.Add(raw)
		}
	}
	for _, form := range []ior.Form{ior.FormAlternates, ior.FormProfiles} {
		multi, _ := ior.MultiAddress("IDL:Prime:1.0", []byte("prime"), []ior.Address{{Host: "a", Port: 1}, {Host: "::1", Port: 2}}, form)
		f.Add([]byte(multi.String()))
		raw, _ := hex.DecodeString(multi.String()[4:])
		f.Add(raw)
	}
	f.Add([]byte("IOR:"))
	f.Add([]byte("ior:0100"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range []string{string(data), "IOR:" + hex.EncodeToString(data)} {
			ref, err := ior.ParseStringified(s)
			if err != nil {
				continue
			}
			for _, o := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
				back, err := ior.ParseStringified(ref.Stringify(o))
				if err != nil {
					t.Fatalf("%v: cannot parse the re-stringified IOR: %v", o, err)
				}
				if !reflect.DeepEqual(back, ref) {
					t.Fatalf("%v: round trip\n got %#v\nwant %#v", o, back, ref)
				}
			}
			_ = ref.WithAddress("h", 1)
			n := 0
			for _, p := range ref.Profiles {
				if ip, ok := p.(ior.IIOPProfile); ok {
					n++
					for _, c := range ip.Components {
						if c.Tag() == ior.TagAlternateIIOPAddress {
							n++
						}
					}
				}
			}
			if eps := ref.Endpoints(); len(eps) != n {
				t.Fatalf("%d endpoints, want %d (IIOP profiles and their alternate addresses): %+v", len(eps), n, eps)
			}
		}
	})
}

// FuzzParseCorbaloc parses arbitrary strings as corbaloc URLs. It must never
// panic, and any URL it accepts must format to one that parses to an equal
// value, whose IOR round-trips too.
func FuzzParseCorbaloc(f *testing.F) {
	for _, s := range []string{
		"corbaloc:iiop:1.2@127.0.0.1:21000/Prime",
		"corbaloc::primary.com:110,:1.2@backup.com:120/Dev/NameService",
		"corbaloc:iiop:[::1]:2810,iiop:1.1@[fe80::1:2]/a%00b%ff",
		"corbaloc:iiop:h",
		"corbaloc:rir:/NameService",
		"corbaloc:iiop:1.0@h_1-x.y:7/POA/x;y?z@w&=+$,-_.!~*'()",
	} {
		f.Add(s)
	}
	for _, ref := range capturedIORs(f) {
		p, _ := ref.IIOP()
		f.Add(ior.Corbaloc{Addresses: []ior.Address{p.Address()}, Key: p.ObjectKey}.String())
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ior.ParseCorbaloc(s)
		if err != nil {
			return
		}
		back, err := ior.ParseCorbaloc(c.String())
		if err != nil {
			t.Fatalf("cannot parse %q, the formatting of %#v: %v", c.String(), c, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip through %q\n got %#v\nwant %#v", c.String(), back, c)
		}
		ref := c.IOR("IDL:X:1.0")
		again, err := ior.ParseStringified(ref.String())
		if err != nil || !reflect.DeepEqual(again, ref) {
			t.Fatalf("IOR round trip: %v\n got %#v\nwant %#v", err, again, ref)
		}
	})
}
