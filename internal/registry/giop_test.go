package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// primeIOR is an omniORB-like reference to a Prime servant.
func primeIOR(host string, port uint16, key string) string {
	return ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{ior.IIOPProfile{
		Order: cdr.LittleEndian, Version: ior.V12, Host: host, Port: port, ObjectKey: []byte(key),
		Components: []ior.Component{ior.ORBType{Order: cdr.LittleEndian, ID: ior.ORBTypeOmniORB}},
	}}}.String()
}

func giopGroup() protocol.Group {
	return protocol.Group{Name: "prime", Protocol: protocol.ProtocolGIOP, FrontDoor: "127.0.0.1:2809",
		Replicas: []protocol.StaticReplica{{Address: primeIOR("10.0.0.5", 4000, "\xffomniPOA\x00key1")}}}
}

func TestGIOPGroupDefaults(t *testing.T) {
	t.Parallel()
	g := WithDefaults(giopGroup())
	if err := Validate(g); err != nil {
		t.Fatalf("valid giop group rejected: %v", err)
	}
	if g.Advertise != "corbaloc:iiop:127.0.0.1:2809" {
		t.Errorf("advertise = %q", g.Advertise)
	}
	if g.GIOP.Locate != protocol.LocateForward || g.GIOP.MaxMessageSize != 16<<20 {
		t.Errorf("giop defaults = %+v, want locate forward and 16 MiB", g.GIOP)
	}
	if h := WithDefaults(validGroup()); h.GIOP != (protocol.GIOP{}) {
		t.Errorf("an http group got giop settings %+v", h.GIOP)
	}
	ref, err := GroupCorbaloc(g.Advertise, g.Name)
	if err != nil || ref.String() != "corbaloc:iiop:127.0.0.1:2809/prime" {
		t.Errorf("GroupCorbaloc = %q, %v", ref.String(), err)
	}
}

func TestGIOPGroupRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*protocol.Group)
		field  string
		want   string
	}{
		{"giop block in a tcp group", func(g *protocol.Group) {
			g.Protocol, g.Binding, g.Replicas, g.GIOP.Locate = protocol.ProtocolTCP, "", nil, protocol.LocateHere
		}, "giop", "only allowed with protocol giop"},
		{"http replica", func(g *protocol.Group) { g.Replicas[0].Address = "http://127.0.0.1:9001" }, "replicas[0].address", "IOR:"},
		{"health path", func(g *protocol.Group) { g.Health.Path = "/healthz" }, "health.path", "LocateRequest"},
		{"locate mode", func(g *protocol.Group) { g.GIOP.Locate = "somewhere" }, "giop.locate", "forward or here"},
		{"message size", func(g *protocol.Group) { g.GIOP.MaxMessageSize = 10 }, "giop.max_message_size", "[1024, 1073741824]"},
		{"advertise http", func(g *protocol.Group) { g.Advertise = "http://lb:2809" }, "advertise", "corbaloc:iiop:"},
		{"advertise other key", func(g *protocol.Group) { g.Advertise = "corbaloc:iiop:lb:2809/other" }, "advertise", `"prime"`},
		{"advertise bad port", func(g *protocol.Group) { g.Advertise = "corbaloc:iiop:lb:99999" }, "advertise", "port"},
		{"duplicate by corbaloc", func(g *protocol.Group) {
			g.Replicas = append(g.Replicas, protocol.StaticReplica{Address: "corbaloc:iiop:1.2@10.0.0.5:4000/%FFomniPOA%00key1"})
		}, "replicas[1].address", "unique"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := giopGroup()
			tt.mutate(&g)
			err := Validate(WithDefaults(g))
			var fe *protocol.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *protocol.FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Error(), tt.want) {
				t.Fatalf("Validate() = field %q, %q; want field %q mentioning %q", fe.Field, fe.Error(), tt.field, tt.want)
			}
		})
	}
	h := validGroup()
	h.GIOP.Locate = protocol.LocateHere
	var fe *protocol.FieldError
	if err := Validate(WithDefaults(h)); !errors.As(err, &fe) || fe.Field != "giop" {
		t.Fatalf("giop settings on an http group: %v, want a giop field error", err)
	}
}

func TestValidateGIOPAddress(t *testing.T) {
	t.Parallel()
	good := []string{
		primeIOR("10.0.0.5", 4000, "k"),
		strings.ToLower(primeIOR("10.0.0.5", 4000, "k")),
		"corbaloc:iiop:1.2@10.0.0.5:4000/prime",
		"corbaloc::replica.example/NameService",
	}
	for _, a := range good {
		if err := ValidateAddress(protocol.ProtocolGIOP, a); err != nil {
			t.Errorf("ValidateAddress(%q) = %v, want nil", a, err)
		}
	}
	nilRef := ior.IOR{TypeID: "IDL:Prime:1.0"}.String()
	noKey := ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{ior.IIOPProfile{Version: ior.V12, Host: "h", Port: 1}}}.String()
	noPort := ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{ior.IIOPProfile{Version: ior.V12, Host: "h", ObjectKey: []byte("k")}}}.String()
	opaque := ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{ior.OpaqueProfile{ID: 99, Data: []byte{0, 1, 2}}}}.String()
	bad := []struct{ addr, want string }{
		{"http://10.0.0.5:4000", "stringified IOR (IOR:...) or a corbaloc:iiop: URL"},
		{"IOR:zz", "invalid byte"},
		{"IOR:0000", "alignment"},
		{nilRef, "nil reference"},
		{noKey, "object key"},
		{noPort, "port other than 0"},
		{opaque, "IIOP profile"},
		{"corbaloc:iiop:10.0.0.5:4000", "object key"},
		{"corbaloc:rir:/NameService", `protocol "rir"`},
		{"corbaloc:iiop:10.0.0.5:4000/k%zz", "escape"},
	}
	for _, tt := range bad {
		err := ValidateAddress(protocol.ProtocolGIOP, tt.addr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateAddress(%q) = %v, want an error mentioning %q", tt.addr, err, tt.want)
		}
	}
	// The type id stays in the message, so that a registration error says
	// which reference was refused.
	if err := ValidateAddress(protocol.ProtocolGIOP, noKey); err == nil || !strings.Contains(err.Error(), "IDL:Prime:1.0") {
		t.Errorf("error %v does not name the repository id", err)
	}
}

func TestGroupTypeID(t *testing.T) {
	t.Parallel()
	if got := GroupTypeID([]string{"corbaloc:iiop:h:1/k", primeIOR("h", 2, "k")}); got != "IDL:Prime:1.0" {
		t.Errorf("GroupTypeID = %q, want the first typed replica's", got)
	}
	if got := GroupTypeID([]string{"corbaloc:iiop:h:1/k"}); got != CORBAObjectTypeID {
		t.Errorf("GroupTypeID of untyped replicas = %q, want %q", got, CORBAObjectTypeID)
	}
}

func TestNormalizeGIOPAddress(t *testing.T) {
	t.Parallel()
	a := primeIOR("Replica.example", 4000, "key")
	if NormalizeAddress(a) != NormalizeAddress("corbaloc:iiop:1.2@replica.example:4000/key") {
		t.Error("one object as IOR and corbaloc URL compares different")
	}
	if NormalizeAddress(a) == NormalizeAddress(primeIOR("replica.example", 4000, "KEY")) {
		t.Error("object keys differing in case compare equal")
	}
}

// A replicated group's replicas are agents addressed by URL, whatever the
// protocol: an object reference is refused there, naming the agent.
func TestValidateGroupAddressReplicated(t *testing.T) {
	t.Parallel()
	ref := primeIOR("10.0.0.5", 4000, "k")
	giop := protocol.Group{Name: "g", Protocol: protocol.ProtocolGIOP}
	repl := protocol.Group{Name: "g", Protocol: protocol.ProtocolGIOP, Binding: protocol.BindingReplicated}
	replHTTP := protocol.Group{Name: "g", Protocol: protocol.ProtocolHTTP, Binding: protocol.BindingReplicated}
	for _, tt := range []struct {
		name string
		g    protocol.Group
		addr string
		want string // "" for valid
	}{
		{"giop ior", giop, ref, ""},
		{"giop url", giop, "http://10.0.0.5:9101", "stringified IOR"},
		{"replicated giop url", repl, "http://10.0.0.5:9101", ""},
		{"replicated giop https", repl, "https://agent.example:9101", ""},
		{"replicated giop ior", repl, ref, "listen URL of the replica's agent"},
		{"replicated giop corbaloc", repl, "corbaloc:iiop:10.0.0.5:4000/k", "--target"},
		{"replicated giop host:port", repl, "10.0.0.5:9101", "http:// or https://"},
		{"replicated http ior", replHTTP, ref, "agent"},
		{"replicated http url", replHTTP, "http://10.0.0.5:9101", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateGroupAddress(tt.g, tt.addr)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("ValidateGroupAddress(%s, %.40q) = %v, want %q", tt.name, tt.addr, err, tt.want)
			}
		})
	}
	valid := repl
	valid.FrontDoor = "127.0.0.1:2809"
	hp := valid
	hp.Health.Path = "/healthz"
	if err := Validate(WithDefaults(hp)); err == nil || !strings.Contains(err.Error(), protocol.ReplicationHealthzPath) {
		t.Errorf("Validate(replicated giop, health.path /healthz) = %v, want an error naming %s", err, protocol.ReplicationHealthzPath)
	}
	static := valid
	static.Replicas = []protocol.StaticReplica{{Address: ref}}
	if err := Validate(WithDefaults(static)); err == nil || !strings.Contains(err.Error(), "replicas[0].address") || !strings.Contains(err.Error(), "agent") {
		t.Errorf("Validate(replicated giop, a static replica's IOR) = %v, want an error on replicas[0].address naming the agent", err)
	}
	static.Replicas = []protocol.StaticReplica{{Address: "http://10.0.0.5:9101"}}
	if err := Validate(WithDefaults(static)); err != nil {
		t.Errorf("Validate(replicated giop, a static agent URL) = %v, want nil", err)
	}
	if got := AddressProtocol(repl); got != protocol.ProtocolHTTP {
		t.Errorf("AddressProtocol(replicated giop) = %q, want http", got)
	}
	if got := AddressProtocol(giop); got != protocol.ProtocolGIOP {
		t.Errorf("AddressProtocol(giop) = %q, want giop", got)
	}
}
