package registry

import (
	"net/netip"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestLoopTarget(t *testing.T) {
	t.Parallel()
	local := Local{
		Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fe80::1%eth0")},
		Names: []string{"lb1.example"},
	}
	ls := []Listener{
		{Name: `front door of group "prime"`, Addr: "127.0.0.1:8000"},
		{Name: `front door of group "wide"`, Addr: "0.0.0.0:8001"},
		{Name: `front door of group "six"`, Addr: "[::]:8002"},
		{Name: `front door of group "one"`, Addr: "10.0.0.5:8003"},
		{Name: `front door of group "giop"`, Addr: "[::1]:2809"},
		{Name: "admin API", Addr: "127.0.0.1:7070"},
		{Name: `front door of group "free"`, Addr: "127.0.0.1:0"},
		{Name: `front door of group "http"`, Addr: ":80"},
	}
	withAlternate := ior.IOR{TypeID: "IDL:x:1.0", Profiles: []ior.Profile{ior.IIOPProfile{
		Version: ior.Version{Major: 1, Minor: 2}, Host: "10.9.9.9", Port: 5000, ObjectKey: []byte("k"),
		Components: []ior.Component{ior.AlternateIIOPAddress{Host: "127.0.0.1", Port: 7070}},
	}}}.String()
	tests := []struct {
		name, proto, addr string
		want              string // the listener's name; "" for none
	}{
		{"own front door", protocol.ProtocolHTTP, "http://127.0.0.1:8000", `front door of group "prime"`},
		{"own front door with a path", protocol.ProtocolHTTP, "http://127.0.0.1:8000/base/", `front door of group "prime"`},
		{"localhost", protocol.ProtocolHTTP, "http://localhost:8000", `front door of group "prime"`},
		{"LOCALHOST with a dot", protocol.ProtocolHTTP, "http://LOCALHOST.:8000", `front door of group "prime"`},
		{"a .localhost name", protocol.ProtocolHTTP, "http://app.localhost:7070", "admin API"},
		{"admin API", protocol.ProtocolHTTP, "http://127.0.0.1:7070", "admin API"},
		{"admin API over https", protocol.ProtocolHTTP, "https://127.0.0.1:7070", "admin API"},
		{"wildcard replica host", protocol.ProtocolHTTP, "http://0.0.0.0:8000", `front door of group "prime"`},
		{"IPv6 wildcard replica host", protocol.ProtocolHTTP, "http://[::]:7070", "admin API"},
		{"other loopback address, listener on 127.0.0.1", protocol.ProtocolHTTP, "http://127.0.0.2:8000", ""},
		{"other loopback address, wildcard listener", protocol.ProtocolHTTP, "http://127.0.0.2:8001", `front door of group "wide"`},
		{"interface address, wildcard listener", protocol.ProtocolHTTP, "http://10.0.0.5:8001", `front door of group "wide"`},
		{"interface address, IPv6 wildcard listener", protocol.ProtocolHTTP, "http://10.0.0.5:8002", `front door of group "six"`},
		{"IPv6 loopback, IPv6 wildcard listener", protocol.ProtocolHTTP, "http://[::1]:8002", `front door of group "six"`},
		{"link-local with zone", protocol.ProtocolHTTP, "http://[fe80::1%25eth0]:8001", `front door of group "wide"`},
		{"IPv4-mapped", protocol.ProtocolHTTP, "http://[::ffff:127.0.0.1]:7070", "admin API"},
		{"legacy short form", protocol.ProtocolHTTP, "http://127.1:7070", "admin API"},
		{"legacy hex form", protocol.ProtocolHTTP, "http://0x7f000001:7070", "admin API"},
		{"legacy decimal form", protocol.ProtocolHTTP, "http://2130706433:7070", "admin API"},
		{"machine name", protocol.ProtocolHTTP, "http://LB1.example:8003", `front door of group "one"`},
		{"listener on one interface", protocol.ProtocolHTTP, "http://10.0.0.5:8003", `front door of group "one"`},
		{"loopback to a listener on another interface", protocol.ProtocolHTTP, "http://127.0.0.1:8003", ""},
		{"remote address, same port", protocol.ProtocolHTTP, "http://10.0.0.6:8001", ""},
		{"unresolved name, same port", protocol.ProtocolHTTP, "http://replica.example:8001", ""},
		{"local address, other port", protocol.ProtocolHTTP, "http://127.0.0.1:9001", ""},
		{"port 0 listener matches nothing", protocol.ProtocolHTTP, "http://127.0.0.1:0", ""},
		{"default http port", protocol.ProtocolHTTP, "http://10.0.0.5", `front door of group "http"`},
		{"default https port", protocol.ProtocolHTTP, "https://10.0.0.5", ""},
		{"corbaloc at a front door", protocol.ProtocolGIOP, "corbaloc:iiop:1.2@localhost:2809/key", `front door of group "giop"`},
		{"corbaloc default port", protocol.ProtocolGIOP, "corbaloc:iiop:[::1]/key", `front door of group "giop"`},
		{"corbaloc second address", protocol.ProtocolGIOP, "corbaloc:iiop:10.9.9.9:5000,:127.0.0.1:8000/key", `front door of group "prime"`},
		{"corbaloc elsewhere", protocol.ProtocolGIOP, "corbaloc:iiop:10.9.9.9:2809/key", ""},
		{"IOR with a looping alternate address", protocol.ProtocolGIOP, withAlternate, "admin API"},
		{"tcp host:port", protocol.ProtocolTCP, "127.0.0.1:8000", `front door of group "prime"`},
		{"unreadable address", protocol.ProtocolHTTP, "http://[::1", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := LoopTarget(tc.proto, tc.addr, ls, local)
			if ok != (tc.want != "") || got.Name != tc.want {
				t.Fatalf("LoopTarget(%s) = %q, %v; want %q", tc.addr, got.Name, ok, tc.want)
			}
		})
	}
}

func TestParseLegacyIPv4(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.1": "127.0.0.1", "127.0.1": "127.0.0.1", "0x7f.1": "127.0.0.1", "0177.0.0.1": "127.0.0.1",
		"2130706433": "127.0.0.1", "10.65535": "10.0.255.255",
	} {
		got, err := parseLegacyIPv4(in)
		if err != nil || got.String() != want {
			t.Errorf("parseLegacyIPv4(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"256.1", "10.16777216", "1.2.65536", "1.2.3.256", "1.2.3.4.5", "", "1..2", "+1", "1_0", "host"} {
		if got, err := parseLegacyIPv4(in); err == nil {
			t.Errorf("parseLegacyIPv4(%q) = %v, want an error", in, got)
		}
	}
}
