package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A generated GIOP group is one "fulcrum serve" accepts: protocol giop, an
// IOR as a static member, probed without a health path.
func TestBalancerConfigGIOP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	replica := backend.NewGIOPPrime(backend.GIOPPrimeOptions{}).Reference("127.0.0.1", 9001).String()
	cfg := balancerConfig("127.0.0.1:7123", filepath.Join(dir, "data"), []GroupSpec{
		{Name: "on-demand", Binding: "on-demand", Protocol: ProtocolGIOP},
		{Name: "per-request", Binding: "per-request", Strategy: "round-robin", Protocol: ProtocolGIOP, Replicas: []string{replica}},
	})
	path := filepath.Join(dir, "fulcrum.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg)
	}
	for _, g := range f.Groups {
		if g.Protocol != protocol.ProtocolGIOP || g.Health.Path != "" {
			t.Errorf("group %s: protocol %q, health path %q; want giop and none", g.Name, g.Protocol, g.Health.Path)
		}
	}
	if got := f.Groups[1].Replicas[0].Address; got != replica {
		t.Errorf("static member %q, want the servant's IOR", got)
	}
}

func TestGIOPHelpers(t *testing.T) {
	t.Parallel()
	ref := backend.NewGIOPPrime(backend.GIOPPrimeOptions{}).Reference("127.0.0.1", 9001).String()
	if hp := GIOPHostPort(ref); hp != "127.0.0.1:9001" {
		t.Errorf("GIOPHostPort(IOR) = %q", hp)
	}
	if hp := GIOPHostPort("corbaloc:iiop:1.2@[::1]:7/x"); hp != "[::1]:7" {
		t.Errorf("GIOPHostPort(corbaloc) = %q", hp)
	}
	if hp := GIOPHostPort("http://127.0.0.1:1"); hp != "" {
		t.Errorf("GIOPHostPort(URL) = %q, want none", hp)
	}
	// A caller with a bad reference fails every call with the reason.
	cs := NewCallers(Endpoint{GIOP: &GIOPCall{Ref: "corbaloc:rir:/x", N: 7}}, 1)
	defer cs.Close()
	if err := cs.Warm(t.Context(), 1); err == nil {
		t.Error("a caller of a bad reference warmed up")
	}
}
