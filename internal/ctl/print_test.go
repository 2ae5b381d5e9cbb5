package ctl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestPrintGIOPReference(t *testing.T) {
	t.Parallel()
	g := protocol.GroupStatus{
		Group:     protocol.Group{Name: "prime", Protocol: protocol.ProtocolGIOP, Advertise: "corbaloc:iiop:127.0.0.1:2809", Binding: protocol.OnDemand, Strategy: "round-robin"},
		Reference: &protocol.Reference{Corbaloc: "corbaloc:iiop:127.0.0.1:2809/prime", IOR: "IOR:000000000000000e49444c3a5072696d653a312e3000"},
	}
	var out bytes.Buffer
	if err := PrintStatus(&out, g, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"corbaloc     corbaloc:iiop:127.0.0.1:2809/prime\n", "ior          IOR:000000000000000e49444c3a5072696d653a312e3000\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := PrintGroups(&out, []protocol.GroupStatus{g}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "corbaloc:iiop:127.0.0.1:2809/prime") {
		t.Errorf("group list does not show the corbaloc reference:\n%s", out.String())
	}

	// HTTP groups print no reference lines.
	g.Protocol, g.Advertise, g.Reference = protocol.ProtocolHTTP, "http://127.0.0.1:8000", nil
	out.Reset()
	if err := PrintStatus(&out, g, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "corbaloc") || strings.Contains(out.String(), "ior ") {
		t.Errorf("http group printed a reference:\n%s", out.String())
	}
}

// TestPrintShortensLongAddresses: a GIOP replica's IOR is shortened in the
// replica table (first and last characters around an ellipsis) unless
// wide; short addresses are printed whole either way.
func TestPrintShortensLongAddresses(t *testing.T) {
	t.Parallel()
	ior := "IOR:010000001000000049444c3a5072696d653a312e300000000001000000000000006400000001010200" + strings.Repeat("0a", 120) + "deadbeef1234"
	g := protocol.GroupStatus{
		Group: protocol.Group{Name: "prime", Protocol: protocol.ProtocolGIOP, Binding: protocol.OnDemand, Strategy: "round-robin"},
		Replicas: []protocol.ReplicaStatus{
			{ID: "r-long", Address: ior, State: protocol.StateActive},
			{ID: "r-short", Address: "corbaloc:iiop:127.0.0.1:9001/prime", State: protocol.StateActive},
		},
	}
	var out bytes.Buffer
	if err := PrintStatus(&out, g, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), ior) {
		t.Errorf("table holds the whole IOR:\n%s", out.String())
	}
	if want := ior[:28] + "…" + ior[len(ior)-12:]; !strings.Contains(out.String(), want+" ") {
		t.Errorf("table lacks the shortened IOR %q:\n%s", want, out.String())
	}
	if !strings.Contains(out.String(), "corbaloc:iiop:127.0.0.1:9001/prime ") {
		t.Errorf("short address not printed whole:\n%s", out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if n := len([]rune(line)); n > 200 {
			t.Errorf("line of %d characters:\n%s", n, line)
		}
	}
	out.Reset()
	if err := PrintStatus(&out, g, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), ior+" ") {
		t.Errorf("wide table lacks the whole IOR:\n%s", out.String())
	}
}
