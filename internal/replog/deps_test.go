package replog

import (
	"os/exec"
	"strings"
	"testing"
)

// TestContractLinksNoEngine keeps the contract apart from its engines:
// a bridge or agent that takes a replog.Log links neither bbolt nor the
// etcd client through it.
func TestContractLinksNoEngine(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{range .Deps}}{{.}} {{end}}`, "github.com/fulcrum-lb/fulcrum/internal/replog").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list listed no dependencies")
	}
	for _, d := range deps {
		if d == "go.etcd.io/bbolt" || strings.HasPrefix(d, "go.etcd.io/etcd/") || strings.Contains(d, "/replog/") {
			t.Errorf("package replog links %s", d)
		}
	}
}
