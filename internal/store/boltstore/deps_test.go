package boltstore

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyTheEmbeddedStoreLinksBbolt keeps bbolt behind the store
// interface: the packages that serve, check and configure groups link the
// contract (package store) at most, never its embedded implementation.
func TestOnlyTheEmbeddedStoreLinksBbolt(t *testing.T) {
	t.Parallel()
	const mod = "github.com/fulcrum-lb/fulcrum/"
	pkgs := []string{
		mod + "protocol", mod + "internal/registry", mod + "internal/config", mod + "internal/health",
		mod + "internal/frontdoor/...", mod + "internal/store", mod + "internal/groupstore",
		mod + "internal/balancer", mod + "internal/api", mod + "internal/ctl",
	}
	out, err := exec.Command("go", append([]string{"list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < len(pkgs) {
		t.Fatalf("go list listed %d packages, want at least %d:\n%s", len(lines), len(pkgs), out)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		for _, dep := range f[1:] {
			if dep == "go.etcd.io/bbolt" || dep == mod+"internal/store/boltstore" {
				t.Errorf("%s links %s", f[0], dep)
			}
		}
	}
}
