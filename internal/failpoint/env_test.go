package failpoint_test

import (
	"os"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
)

func TestNth(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "return", 1: "return", 2: "1*off->return", 250: "249*off->return"} {
		if got := failpoint.Nth(n); got != want {
			t.Errorf("Nth(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestEnv(t *testing.T) {
	t.Parallel()
	got := failpoint.Env(map[string]string{"b": failpoint.Always, "a": failpoint.Nth(3)})
	if want := "GOFAIL_FAILPOINTS=a=2*off->return;b=return"; got != want {
		t.Errorf("Env = %q, want %q", got, want)
	}
}

// TestCheckBinaryRefusesOthers: a Go test binary links no gofail, a file
// that is no Go executable has no build information; both are refused
// with the path named. (The failpoint binary passing is tested in
// failpointbuild, which builds one.)
func TestCheckBinaryRefusesOthers(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := failpoint.CheckBinary(self); err == nil || !strings.Contains(err.Error(), "has no failpoints") {
		t.Errorf("CheckBinary(test binary) = %v, want an error saying it has no failpoints", err)
	}
	if err := failpoint.CheckBinary("env_test.go"); err == nil || !strings.Contains(err.Error(), "env_test.go") {
		t.Errorf("CheckBinary(a source file) = %v, want an error naming it", err)
	}
}
