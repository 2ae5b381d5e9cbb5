package cli

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/buildinfo"
)

// TestVersionCommands: "fulcrum version", "fulcrum --version" and "-v" print
// the same lines, derived from runtime/debug's build information, and the
// version stamped at link time wins.
func TestVersionCommands(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("a test binary has build information")
	}
	for _, stamped := range []string{"", "v0.9.1-test"} {
		t.Run("stamped="+stamped, func(t *testing.T) {
			old := Version
			Version = stamped
			t.Cleanup(func() { Version = old })
			want := buildinfo.From(stamped, bi).Text("fulcrum")
			wantVersion := stamped
			if stamped == "" {
				wantVersion = buildinfo.DevVersion // a test binary's module is (devel)
			}
			if !strings.HasPrefix(want, "fulcrum "+wantVersion+"\n") || !strings.Contains(want, "\ngo: "+runtime.Version()+"\n") {
				t.Errorf("want text %q: not version %s and Go %s", want, wantVersion, runtime.Version())
			}
			for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
				root := NewRoot()
				var out bytes.Buffer
				root.SetOut(&out)
				root.SetArgs(args)
				if err := root.Execute(); err != nil {
					t.Fatalf("fulcrum %s: %v", args[0], err)
				}
				if out.String() != want {
					t.Errorf("fulcrum %s printed:\n%s\nwant:\n%s", args[0], out.String(), want)
				}
			}
		})
	}
}
