package analyzer_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The scenario scripts in testdata/*.txt are blocks of
//
//	command arg key=value ...
//	----
//	expected output
//
// separated by blank lines; lines starting with # outside blocks are
// comments. go test -run TestScenarios -rewrite rewrites the expected
// output from what the commands print now.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt scenarios")

// scriptCmd is one parsed command.
type scriptCmd struct {
	line  int
	name  string
	pos   []string          // positional arguments
	args  map[string]string // key=value arguments
	order []string          // keys in order
}

// scriptBlock is a command with its expected output.
type scriptBlock struct {
	comments []string
	cmd      scriptCmd
	raw      string
	want     string
}

func parseScript(path string) ([]scriptBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var blocks []scriptBlock
	var comments []string
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			if len(comments) > 0 {
				comments = append(comments, "")
			}
			continue
		case strings.HasPrefix(trimmed, "#"):
			comments = append(comments, line)
			continue
		}
		b := scriptBlock{comments: trimComments(comments), raw: trimmed}
		comments = nil
		b.cmd = parseCmd(trimmed, lineNo)
		sep, ok := next()
		if !ok || strings.TrimSpace(sep) != "----" {
			return nil, fmt.Errorf("%s:%d: command %q must be followed by ----", path, lineNo, trimmed)
		}
		var want []string
		for {
			l, ok := next()
			if !ok || strings.TrimSpace(l) == "" {
				break
			}
			want = append(want, l)
		}
		b.want = strings.Join(want, "\n")
		blocks = append(blocks, b)
	}
	return blocks, sc.Err()
}

// trimComments drops the blank lines that end a comment run (they separate
// it from the command).
func trimComments(c []string) []string {
	for len(c) > 0 && c[len(c)-1] == "" {
		c = c[:len(c)-1]
	}
	return c
}

func parseCmd(line string, lineNo int) scriptCmd {
	fields := strings.Fields(line)
	c := scriptCmd{line: lineNo, name: fields[0], args: map[string]string{}}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			c.args[k] = v
			c.order = append(c.order, k)
		} else {
			c.pos = append(c.pos, f)
		}
	}
	return c
}

func writeScript(path string, blocks []scriptBlock, outs []string) error {
	var b strings.Builder
	for i, bl := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, c := range bl.comments {
			b.WriteString(c + "\n")
		}
		b.WriteString(bl.raw + "\n----\n")
		if outs[i] != "" {
			b.WriteString(outs[i] + "\n")
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// runScripts runs every testdata/*.txt script, each with a fresh runner
// from newRunner.
func runScripts(t *testing.T, newRunner func(t *testing.T) func(c scriptCmd) string) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenario scripts: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			t.Parallel()
			blocks, err := parseScript(path)
			if err != nil {
				t.Fatal(err)
			}
			run := newRunner(t)
			outs := make([]string, len(blocks))
			for i, b := range blocks {
				outs[i] = strings.TrimRight(run(b.cmd), "\n")
				if !*rewrite && outs[i] != b.want {
					t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, b.cmd.line, b.raw, outs[i], b.want)
				}
			}
			if *rewrite {
				if err := writeScript(path, blocks, outs); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
