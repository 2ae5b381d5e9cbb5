package dashboard_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/dashboard"
)

// TestVendoredChecksums checks that every vendored uPlot file is listed in
// its VERSION file with the sha256 it has, and that every listed file
// exists: the library stays exactly the pinned release.
func TestVendoredChecksums(t *testing.T) {
	t.Parallel()
	const dir = "vendor/uplot"
	files := dashboard.Files()
	version, err := fs.ReadFile(files, dir+"/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	fields := map[string]string{}
	for line := range strings.Lines(string(version)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("VERSION: line %q is not \"key: value\"", line)
		}
		if key != "sha256" {
			fields[key] = val
			continue
		}
		sum, name, ok := strings.Cut(val, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("VERSION: line %q is not \"sha256: <64 hex>  <file>\"", line)
		}
		want[name] = sum
	}
	for _, k := range []string{"package", "version", "source", "source-sha256"} {
		if fields[k] == "" {
			t.Errorf("VERSION has no %q", k)
		}
	}
	if !strings.Contains(fields["source"], fields["version"]) {
		t.Errorf("VERSION: source %q does not name version %q", fields["source"], fields["version"])
	}
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Name() == "VERSION" {
			continue
		}
		seen[e.Name()] = true
		b, err := fs.ReadFile(files, dir+"/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		got := hex.EncodeToString(sum[:])
		switch w, ok := want[e.Name()]; {
		case !ok:
			t.Errorf("%s/%s is not listed in VERSION (sha256 %s)", dir, e.Name(), got)
		case w != got:
			t.Errorf("%s/%s has sha256 %s, VERSION pins %s", dir, e.Name(), got, w)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("VERSION lists %s, which is not in %s", name, dir)
		}
	}
	if len(want) < 3 {
		t.Errorf("VERSION lists %d files, want the script, the stylesheet and the LICENSE", len(want))
	}
}
