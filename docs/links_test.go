// Package docs_test keeps the documentation standing alone: the README and
// the pages in docs/ link only to files that exist in the repository and
// name nothing outside it.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pages are the README and the pages of docs/ (the recorded runs under
// docs/results/ are records, kept as they were written).
func pages(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, filepath.Join("..", "README.md"))
	if len(names) < 10 {
		t.Fatalf("found %d pages (%v): is the test run from docs/?", len(names), names)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

// root is the repository's root, as an absolute path.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var (
	// mdLink is a Markdown link or image: [text](target) or ![alt](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// upPath is a relative path that climbs: ../x, ../../x.
	upPath = regexp.MustCompile(`(?:^|[\s("'\x60\[])((?:\.\./)+[^\s)"'\x60\]]*)`)
	// outside are ways the docs once named files outside the repository,
	// or the papers by the numbers of a collection that is not in it.
	outside = []*regexp.Regexp{
		regexp.MustCompile(`shared/(?:DESIGN|STYLE)\.md`),
		regexp.MustCompile(`shared/seeds`),
		regexp.MustCompile(`(?i)\bseeds?\s+00\d`),
		regexp.MustCompile(`(?i)\bthe seeds'?`),
	}
)

// TestLinksResolveInsideTheRepository fails for a relative link whose
// file does not exist, and for any link or path that leads out of the
// repository.
func TestLinksResolveInsideTheRepository(t *testing.T) {
	t.Parallel()
	repo := root(t)
	for name, text := range pages(t) {
		dir, err := filepath.Abs(filepath.Dir(name))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			file, _, _ := strings.Cut(target, "#")
			path := filepath.Join(dir, file)
			if !inside(repo, path) {
				t.Errorf("%s: link %q leads outside the repository", name, target)
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: %v", name, target, err)
			}
		}
		for _, m := range upPath.FindAllStringSubmatch(text, -1) {
			if p := filepath.Join(dir, m[1]); !inside(repo, p) {
				t.Errorf("%s: path %q is outside the repository", name, m[1])
			}
		}
	}
}

// TestNothingNamedOutsideTheRepository fails for the names of files
// outside the repository that the docs once pointed at.
func TestNothingNamedOutsideTheRepository(t *testing.T) {
	t.Parallel()
	for name, text := range pages(t) {
		for i, line := range strings.Split(text, "\n") {
			for _, re := range outside {
				if m := re.FindString(line); m != "" {
					t.Errorf("%s:%d: %q names something outside the repository (cite the paper by its authors and year, see docs/design.md): %s", name, i+1, m, line)
				}
			}
		}
	}
}

// TestCheckerCatchesEscapes keeps the checks above honest.
func TestCheckerCatchesEscapes(t *testing.T) {
	t.Parallel()
	repo := root(t)
	for _, tc := range []struct {
		dir  string // the page's directory in the repository
		text string
		want string // the escaping path found, or "" for none
	}{
		{".", "see `../shared/DESIGN.md`", "../shared/DESIGN.md"},
		{"docs", "[design](../../x.md)", "../../x.md"},
		{"docs", "from `../README.md`", ""},
		{".", "a..b/c", ""},
	} {
		got := ""
		for _, m := range upPath.FindAllStringSubmatch(tc.text, -1) {
			if p := filepath.Join(repo, tc.dir, m[1]); !inside(repo, p) {
				got = m[1]
			}
		}
		if got != tc.want {
			t.Errorf("%q: escaping path %q, want %q", tc.text, got, tc.want)
		}
	}
	for _, s := range []string{"as seed 000 §3.2 says", "the seeds' experiments", "`../shared/seeds/`"} {
		found := false
		for _, re := range outside {
			found = found || re.MatchString(s)
		}
		if !found {
			t.Errorf("%q is not caught", s)
		}
	}
	if inside(repo, filepath.Join(repo, "..", "shared")) || !inside(repo, filepath.Join(repo, "docs", "x.md")) {
		t.Error("inside is wrong")
	}
}

// inside reports whether path is repo or under it.
func inside(repo, path string) bool {
	rel, err := filepath.Rel(repo, filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
