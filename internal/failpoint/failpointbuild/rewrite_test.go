package failpointbuild

import (
	"bytes"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
)

const rewriteSrc = `// Package p is a test.
package p // a trailing comment

import "fmt"

func f() {
	fmt.Println("before")
	// gofail: var fpKill struct{}
	// failpoint.Kill()
	fmt.Println("after")
}
`

func TestRewriteAddsImportKeepingLines(t *testing.T) {
	t.Parallel()
	ms, err := parseMarkers("p.go", []byte(rewriteSrc))
	if err != nil {
		t.Fatal(err)
	}
	out, fps, err := rewrite("p.go", []byte(rewriteSrc), ms)
	if err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if len(fps) != 1 || fps[0].Name() != "fpKill" {
		t.Fatalf("failpoints = %v, want fpKill", fps)
	}
	if got, want := bytes.Count(out, []byte("\n")), strings.Count(rewriteSrc, "\n"); got != want {
		t.Errorf("rewritten file has %d lines, the source %d: line numbers moved\n%s", got, want, out)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", out, parser.ParseComments)
	if err != nil {
		t.Fatalf("the rewritten file does not parse: %v\n%s", err, out)
	}
	var paths []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		paths = append(paths, p)
	}
	if strings.Join(paths, " ") != failpoint.ImportPath+" fmt" {
		t.Errorf("imports = %v, want %s and fmt", paths, failpoint.ImportPath)
	}
	if f.Doc == nil || !strings.Contains(f.Doc.Text(), "Package p is a test.") {
		t.Errorf("the package doc comment was lost:\n%s", out)
	}
	lines := strings.Split(string(out), "\n")
	if !strings.Contains(lines[7], "__fp_fpKill.Acquire()") || !strings.Contains(lines[8], "failpoint.Kill()") {
		t.Errorf("lines 8-9 are not the failpoint:\n%s", out)
	}
	if !strings.Contains(lines[9], `fmt.Println("after")`) {
		t.Errorf("line 10 is %q, want the statement after the failpoint", lines[9])
	}
}

func TestRewriteWithoutKillAddsNoImport(t *testing.T) {
	t.Parallel()
	src := "package p\n\nfunc f() {\n\t// gofail: var fpSleep struct{}\n\n\tg()\n}\n"
	ms, err := parseMarkers("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := rewrite("p.go", []byte(src), ms)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("import")) {
		t.Errorf("a failpoint without Kill got an import:\n%s", out)
	}
	if !bytes.Contains(out, []byte("__fp_fpSleep.Acquire()")) {
		t.Errorf("the marker was not rewritten:\n%s", out)
	}
}

func TestRewriteKeepsAnExistingImport(t *testing.T) {
	t.Parallel()
	src := "package p\n\nimport \"" + failpoint.ImportPath + "\"\n\nvar _ = failpoint.Kill\n\nfunc f() {\n\t// gofail: var fpK struct{}\n\t// failpoint.Kill()\n\tg()\n}\n"
	ms, _ := parseMarkers("p.go", []byte(src))
	out, _, err := rewrite("p.go", []byte(src), ms)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out, []byte(strconv.Quote(failpoint.ImportPath))); n != 1 {
		t.Errorf("the import appears %d times, want once:\n%s", n, out)
	}

	renamed := strings.Replace(src, "import \"", "import fp \"", 1)
	ms, _ = parseMarkers("p.go", []byte(renamed))
	if _, _, err := rewrite("p.go", []byte(renamed), ms); err == nil || !strings.Contains(err.Error(), "as fp") {
		t.Errorf("rewrite with the package imported as fp = %v, want an error", err)
	}
}
