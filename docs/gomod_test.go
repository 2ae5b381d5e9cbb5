package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLibrariesGoModGuidance holds docs/libraries.md to go.mod: the
// require line names the module, and the Go version said to be needed is
// go.mod's go line.
func TestLibrariesGoModGuidance(t *testing.T) {
	t.Parallel()
	gomod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(gomod)
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if module == nil || goLine == nil {
		t.Fatalf("go.mod has no module or go line:\n%s", gomod)
	}
	doc, err := os.ReadFile("libraries.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"go get " + string(module[1]) + "@latest",
		"require " + string(module[1]) + " v",
		"`go " + string(goLine[1]) + "`",
		"needs Go " + string(goLine[1]) + " or later",
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/libraries.md lacks %q (from go.mod)", want)
		}
	}
}
