package ior_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

func TestParseCorbaloc(t *testing.T) {
	t.Parallel()
	addr := func(v ior.Version, host string, port uint16) ior.Address {
		return ior.Address{Version: v, Host: host, Port: port}
	}
	tests := []struct {
		in    string
		addrs []ior.Address
		key   string
		str   string // String() of the result
	}{
		{"corbaloc:iiop:lb.example:2809/primes", []ior.Address{addr(ior.V10, "lb.example", 2809)}, "primes",
			"corbaloc:iiop:lb.example:2809/primes"},
		{"corbaloc:iiop:1.2@127.0.0.1:21000/Prime", []ior.Address{addr(ior.V12, "127.0.0.1", 21000)}, "Prime",
			"corbaloc:iiop:1.2@127.0.0.1:21000/Prime"},
		{"corbaloc::host/k", []ior.Address{addr(ior.V10, "host", ior.DefaultPort)}, "k", "corbaloc:iiop:host:2809/k"},
		{"corbaloc::primary.com:110,:1.2@backup.com:120/Dev/NameService",
			[]ior.Address{addr(ior.V10, "primary.com", 110), addr(ior.V12, "backup.com", 120)}, "Dev/NameService",
			"corbaloc:iiop:primary.com:110,iiop:1.2@backup.com:120/Dev/NameService"},
		{"corbaloc:iiop:[::1]:2810,iiop:1.1@[fe80::1:2]/a", []ior.Address{addr(ior.V10, "::1", 2810), addr(ior.V11, "fe80::1:2", 2809)}, "a",
			"corbaloc:iiop:[::1]:2810,iiop:1.1@[fe80::1:2]:2809/a"},
		{"corbaloc:iiop:[::ffff:10.0.0.1]:9/a", []ior.Address{addr(ior.V10, "::ffff:10.0.0.1", 9)}, "a", "corbaloc:iiop:[::ffff:10.0.0.1]:9/a"},
		{"CORBALOC:IIOP:h:1/%ffkey%00Prime%2f%2F", []ior.Address{addr(ior.V10, "h", 1)}, "\xffkey\x00Prime//",
			"corbaloc:iiop:h:1/%FFkey%00Prime//"},
		{"corbaloc:iiop:h:1/a b#c%25", []ior.Address{addr(ior.V10, "h", 1)}, "a b#c%", "corbaloc:iiop:h:1/a%20b%23c%25"},
		{"corbaloc:iiop:h", []ior.Address{addr(ior.V10, "h", ior.DefaultPort)}, "", "corbaloc:iiop:h:2809/"},
		{"corbaloc:iiop:h:65535/", []ior.Address{addr(ior.V10, "h", 65535)}, "", "corbaloc:iiop:h:65535/"},
		{"  corbaloc:iiop:1.0@h_1-x.y:7/POA/x;y?z@w&=+$,-_.!~*'()\n", []ior.Address{addr(ior.V10, "h_1-x.y", 7)}, "POA/x;y?z@w&=+$,-_.!~*'()",
			"corbaloc:iiop:h_1-x.y:7/POA/x;y?z@w&=+$,-_.!~*'()"},
		{"corbaloc:iiop:1.3@h/k", []ior.Address{addr(ior.Version{1, 3}, "h", 2809)}, "k", "corbaloc:iiop:1.3@h:2809/k"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			c, err := ior.ParseCorbaloc(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Addresses, tt.addrs) || string(c.Key) != tt.key {
				t.Fatalf("got %+v key %q, want %+v key %q", c.Addresses, c.Key, tt.addrs, tt.key)
			}
			if tt.key == "" && c.Key != nil {
				t.Fatalf("empty key is %#v, want nil", c.Key)
			}
			if s := c.String(); s != tt.str {
				t.Fatalf("String() = %q, want %q", s, tt.str)
			}
			again, err := ior.ParseCorbaloc(c.String())
			if err != nil || !reflect.DeepEqual(again, c) {
				t.Fatalf("String() does not parse back: %+v, %v", again, err)
			}
		})
	}
}

func TestParseCorbalocErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"corbaname::h/k", `ior: corbaloc URL must start with "corbaloc:"`},
		{"corbaloc:", `ior: corbaloc address 1 "": no protocol (want "iiop:" or ":")`},
		{"corbaloc:rir:/NameService", `ior: corbaloc address 1 "rir:": protocol "rir" is not supported, only iiop`},
		{"corbaloc:ssliop:h/k", `ior: corbaloc address 1 "ssliop:h": protocol "ssliop" is not supported, only iiop`},
		{"corbaloc:h:1/k", `ior: corbaloc address 1 "h:1": protocol "h" is not supported, only iiop`},
		{"corbaloc:iiop:/k", `ior: corbaloc address 1 "iiop:": empty host`},
		{"corbaloc:iiop:h:1,/k", `ior: corbaloc address 2 "": no protocol (want "iiop:" or ":")`},
		{"corbaloc:iiop:h:/k", `ior: corbaloc address 1 "iiop:h:": empty port`},
		{"corbaloc:iiop:h:0/k", `ior: corbaloc address 1 "iiop:h:0": port "0" is not a number in 1..65535`},
		{"corbaloc:iiop:h:65536/k", `ior: corbaloc address 1 "iiop:h:65536": port "65536" is not a number in 1..65535`},
		{"corbaloc:iiop:h:+80/k", `ior: corbaloc address 1 "iiop:h:+80": port "+80" is not a number in 1..65535`},
		{"corbaloc:iiop:h:http/k", `ior: corbaloc address 1 "iiop:h:http": port "http" is not a number in 1..65535`},
		{"corbaloc:iiop:::1/k", `ior: corbaloc address 1 "iiop:::1": an IPv6 address must be in brackets`},
		{"corbaloc:iiop:[::1/k", `ior: corbaloc address 1 "iiop:[::1": IPv6 address without closing bracket`},
		{"corbaloc:iiop:[host]:1/k", `ior: corbaloc address 1 "iiop:[host]:1": "host" in brackets is not an IPv6 address`},
		{"corbaloc:iiop:[::1]x/k", `ior: corbaloc address 1 "iiop:[::1]x": unexpected "x" after the IPv6 address`},
		{"corbaloc:iiop:[::1]:/k", `ior: corbaloc address 1 "iiop:[::1]:": empty port`},
		{"corbaloc:iiop:h%41/k", `ior: corbaloc address 1 "iiop:h%41": host "h%41" contains '%'`},
		{"corbaloc:iiop:1@h/k", `ior: corbaloc address 1 "iiop:1@h": version "1" is not major.minor`},
		{"corbaloc:iiop:1.x@h/k", `ior: corbaloc address 1 "iiop:1.x@h": version "1.x" is not major.minor`},
		{"corbaloc:iiop:1.256@h/k", `ior: corbaloc address 1 "iiop:1.256@h": version "1.256" is not major.minor`},
		{"corbaloc:iiop:2.0@h/k", `ior: corbaloc address 1 "iiop:2.0@h": IIOP version 2.0, want 1.x`},
		{"corbaloc:iiop:h/k%2", `ior: corbaloc object key "k%2": bad %xx escape at character 1`},
		{"corbaloc:iiop:h/%zz", `ior: corbaloc object key "%zz": bad %xx escape at character 0`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			_, err := ior.ParseCorbaloc(tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			if want, ok := strings.CutSuffix(tt.want, " ..."); ok {
				if !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("error\n%v, want prefix\n%s", err, want)
				}
			} else if err.Error() != tt.want {
				t.Fatalf("error\n%v, want\n%s", err, tt.want)
			}
		})
	}
}

func TestCorbalocIOR(t *testing.T) {
	t.Parallel()
	c, err := ior.ParseCorbaloc("corbaloc:iiop:1.2@lb.example:2809,:[::1]:2810/primes")
	if err != nil {
		t.Fatal(err)
	}
	ref := c.IOR("IDL:Prime:1.0")
	want := ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{
		ior.IIOPProfile{Order: cdr.BigEndian, Version: ior.V12, Host: "lb.example", Port: 2809, ObjectKey: []byte("primes")},
		ior.IIOPProfile{Order: cdr.BigEndian, Version: ior.V10, Host: "::1", Port: 2810, ObjectKey: []byte("primes")},
	}}
	if !reflect.DeepEqual(ref, want) {
		t.Fatalf("got %#v\nwant %#v", ref, want)
	}
	back, err := ior.ParseStringified(ref.String())
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("stringified round trip: %#v, %v", back, err)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	ref, err := ior.Parse("corbaloc::h:5/k")
	if err != nil || ref.TypeID != "" || len(ref.Profiles) != 1 {
		t.Fatalf("%+v, %v", ref, err)
	}
	ref, err = ior.Parse(" " + strings.ToLower(sample.String()) + " ")
	if err != nil || !reflect.DeepEqual(ref, sample) {
		t.Fatalf("%+v, %v", ref, err)
	}
	for in, want := range map[string]string{
		"http://h/k":         `ior: reference must start with "IOR:" or "corbaloc:"`,
		"corbaloc:rir:/Name": `ior: corbaloc address 1 "rir:": protocol "rir" is not supported, only iiop`,
		"IOR:0":              "ior: stringified IOR has an odd number (1) of hex digits",
	} {
		if _, err := ior.Parse(in); err == nil || err.Error() != want {
			t.Errorf("Parse(%q) error %v, want %s", in, err, want)
		}
	}
}
