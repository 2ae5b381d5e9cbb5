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
	if err := PrintStatus(&out, g); err != nil {
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
	if err := PrintStatus(&out, g); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "corbaloc") || strings.Contains(out.String(), "ior ") {
		t.Errorf("http group printed a reference:\n%s", out.String())
	}
}
