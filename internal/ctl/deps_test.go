package ctl

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoServer keeps ctl an API client: it speaks the shapes of package
// protocol and links none of the server's packages (the balancer, the
// registry, the store and its bbolt, the front doors).
func TestLinksNoServer(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const mod = "github.com/fulcrum-lb/fulcrum/"
	allowed := map[string]bool{mod + "protocol": true, mod + "internal/ctl": true}
	var seen int
	for _, p := range strings.Fields(string(out)) {
		if p == "go.etcd.io/bbolt" {
			t.Errorf("ctl links %s", p)
		}
		if strings.HasPrefix(p, mod) {
			seen++
			if !allowed[p] {
				t.Errorf("ctl links %s; it may link only protocol", p)
			}
		}
	}
	if seen != len(allowed) {
		t.Errorf("go list saw %d of fulcrum's packages, want %d (protocol and ctl itself):\n%s", seen, len(allowed), out)
	}
}
