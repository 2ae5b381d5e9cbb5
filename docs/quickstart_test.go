package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// quickStartConfig matches a config file the README writes with a heredoc:
// its name and its contents.
var quickStartConfig = regexp.MustCompile("(?s)cat > (fulcrum[^ ]*\\.yaml) <<'EOF'\n(.*?)\nEOF\n")

// TestReadmeQuickStartsAreIndependent parses the config files of the
// README's two quick starts with fulcrum's own config parser and requires
// them to be valid and to share no admin address, data directory or front
// door, and the README to say to stop the first before the second. The
// names must be ones .gitignore keeps out of the repository.
func TestReadmeQuickStartsAreIndependent(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile(filepath.Join("..", ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	found := quickStartConfig.FindAllStringSubmatch(string(readme), -1)
	if len(found) != 2 {
		t.Fatalf("README writes %d config files, want the two quick starts'", len(found))
	}
	seen := map[string]string{}
	claim := func(what, value, file string) {
		if other, ok := seen[what+" "+value]; ok {
			t.Errorf("%s and %s share %s %s", other, file, what, value)
		}
		seen[what+" "+value] = file
	}
	for _, m := range found {
		name, body := m[1], m[2]
		f, err := config.Parse(name, []byte(body))
		if err != nil {
			t.Errorf("README's %s does not parse: %v", name, err)
			continue
		}
		claim("admin", f.Admin, name)
		claim("data_dir", filepath.Clean(f.DataDir), name)
		for _, g := range f.Groups {
			claim("front_door", g.FrontDoor, name)
		}
		if ok, _ := filepath.Match("fulcrum*.yaml", name); !ok || !strings.Contains(string(ignore), "/fulcrum*.yaml\n") {
			t.Errorf("%s is not kept out of the repository by .gitignore's /fulcrum*.yaml", name)
		}
		if dir := "/" + strings.TrimPrefix(filepath.Clean(f.DataDir), "./") + "/\n"; !strings.Contains(string(ignore), dir) {
			t.Errorf("data_dir %s of %s is not in .gitignore (want a line %q)", f.DataDir, name, strings.TrimSpace(dir))
		}
	}
	if !strings.Contains(string(readme), "Stop this set-up before you try the next one") {
		t.Error("README does not say to stop the first quick start before the next")
	}
}
