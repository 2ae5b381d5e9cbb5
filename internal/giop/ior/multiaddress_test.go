package ior_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

func TestMultiAddress(t *testing.T) {
	t.Parallel()
	addrs := []ior.Address{
		{Version: ior.V10, Host: "127.0.0.1", Port: 2809},
		{Version: ior.V12, Host: "lb2.example", Port: 2810},
		{Version: ior.V10, Host: "::1", Port: 2811},
	}
	key := []byte("prime")
	for _, tc := range []struct {
		name      string
		form      ior.Form
		profiles  int
		wantVer   []ior.Version
		alternate []bool
	}{
		{"alternates", ior.FormAlternates, 1, []ior.Version{ior.V12, ior.V12, ior.V12}, []bool{false, true, true}},
		{"profiles", ior.FormProfiles, 3, []ior.Version{ior.V10, ior.V12, ior.V10}, []bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ref, err := ior.MultiAddress("IDL:Prime:1.0", key, addrs, tc.form)
			if err != nil {
				t.Fatal(err)
			}
			if len(ref.Profiles) != tc.profiles || ref.TypeID != "IDL:Prime:1.0" {
				t.Fatalf("%d profiles, type %q; want %d, IDL:Prime:1.0", len(ref.Profiles), ref.TypeID, tc.profiles)
			}
			// Through the wire and back, the addresses come out in order.
			back, err := ior.ParseStringified(ref.Stringify(cdr.LittleEndian))
			if err != nil {
				t.Fatal(err)
			}
			eps := back.Endpoints()
			if len(eps) != len(addrs) {
				t.Fatalf("%d endpoints, want %d: %+v", len(eps), len(addrs), eps)
			}
			for i, ep := range eps {
				want := ior.Address{Version: tc.wantVer[i], Host: addrs[i].Host, Port: addrs[i].Port}
				wantIndex := i
				if tc.form == ior.FormAlternates {
					wantIndex = 0
				}
				if ep.Address != want || ep.Alternate != tc.alternate[i] || ep.ProfileIndex != wantIndex || string(ep.Profile.ObjectKey) != "prime" {
					t.Errorf("endpoint %d: %+v, want %+v (alternate %v) with key prime", i, ep, want, tc.alternate[i])
				}
			}
		})
	}
}

func TestMultiAddressRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		addrs []ior.Address
		form  ior.Form
		want  string
	}{
		{"no addresses", nil, ior.FormAlternates, "no addresses"},
		{"unknown form", []ior.Address{{Host: "h", Port: 1}}, ior.Form(7), "form Form(7), want alternates or profiles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ior.MultiAddress("", []byte("k"), tc.addrs, tc.form)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A corbaloc URL with several addresses denotes one profile per address:
// the same endpoints as FormProfiles.
func TestCorbalocEndpoints(t *testing.T) {
	t.Parallel()
	c, err := ior.ParseCorbaloc("corbaloc:iiop:1.2@10.0.0.1:2809,iiop:1.2@10.0.0.2:2810/prime")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ior.MultiAddress("IDL:Prime:1.0", []byte("prime"), c.Addresses, ior.FormProfiles)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.IOR("IDL:Prime:1.0"); !reflect.DeepEqual(got.Endpoints(), want.Endpoints()) {
		t.Fatalf("endpoints %+v, want %+v", got.Endpoints(), want.Endpoints())
	}
}

// A reference without IIOP profiles offers no endpoint.
func TestEndpointsOpaqueProfile(t *testing.T) {
	t.Parallel()
	ref := ior.IOR{TypeID: "IDL:X:1.0", Profiles: []ior.Profile{ior.OpaqueProfile{ID: ior.TagMultipleComponents, Data: []byte{0, 0, 0, 0, 0}}}}
	if eps := ref.Endpoints(); len(eps) != 0 {
		t.Fatalf("endpoints %+v, want none", eps)
	}
}

func TestParseHostPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want ior.Address
		err  string
	}{
		{in: "10.0.0.2:2809", want: ior.Address{Version: ior.V12, Host: "10.0.0.2", Port: 2809}},
		{in: "lb-2.example:1", want: ior.Address{Version: ior.V12, Host: "lb-2.example", Port: 1}},
		{in: "[::1]:65535", want: ior.Address{Version: ior.V12, Host: "::1", Port: 65535}},
		{in: "10.0.0.2", err: `no port, want host:port`},
		{in: "h:0", err: `port "0" is not a number in 1..65535`},
		{in: "h:65536", err: `port "65536" is not a number in 1..65535`},
		{in: "h:+1", err: `port "+1" is not a number in 1..65535`},
		{in: ":2809", err: "empty host"},
		{in: "::1:2809", err: "must be in brackets"},
		{in: "h/x:1", err: `contains '/'`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ior.ParseHostPort(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.in) {
					t.Fatalf("ParseHostPort(%q) = %+v, %v; want an error naming it and containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseHostPort(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}
