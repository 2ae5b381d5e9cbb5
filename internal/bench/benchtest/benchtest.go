// Package benchtest holds what the experiments' tests share: the fulcrum
// binary their real balancers, replicas and client processes run.
//
//	func TestSmoke(t *testing.T) {
//		bin := benchtest.Binary(t)
//		outs, err := bench.Run(ctx, exps, bench.Options{Binary: bin, Size: bench.Smoke, ...})
//		...
//	}
package benchtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Binary builds ./cmd/fulcrum of the module the test runs in into a
// directory of t's (removed when t ends) and returns its path. It fails t
// when the build fails, with the compiler's output.
func Binary(t testing.TB) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("benchtest: go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == "/dev/null" {
		t.Fatalf("benchtest: not inside a module (go env GOMOD = %q)", mod)
	}
	root := filepath.Dir(mod)
	path := filepath.Join(t.TempDir(), "fulcrum")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/fulcrum")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("benchtest: building fulcrum: %v\n%s", err, out)
	}
	return path
}
