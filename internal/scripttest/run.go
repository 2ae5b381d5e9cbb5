package scripttest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite is the -rewrite flag of the test binaries that run scripts.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the scenario scripts from what the commands print now")

// Run runs every script matching pattern (a filepath.Glob pattern, such
// as "testdata/*.txt") as a parallel subtest named after the file. Each
// script gets a fresh runner from newRunner, which is called with every
// command in turn and returns what it prints; trailing newlines are
// dropped. An output that differs from the expected one fails the test,
// naming the file, line and command; with the -rewrite flag, the script
// is written again with the outputs as the expected ones instead. No
// script matching pattern fails the test.
func Run(t *testing.T, pattern string, newRunner func(t *testing.T) func(Cmd) string) {
	t.Helper()
	run(t, pattern, *rewrite, newRunner)
}

func run(t *testing.T, pattern string, rewrite bool, newRunner func(t *testing.T) func(Cmd) string) {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenario scripts match %s: %v", pattern, err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), func(t *testing.T) {
			t.Parallel()
			blocks, err := ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			run := newRunner(t)
			outs := make([]string, len(blocks))
			for i, b := range blocks {
				outs[i] = strings.TrimRight(run(b.Cmd), "\n")
				if msg := mismatch(path, b, outs[i]); !rewrite && msg != "" {
					t.Error(msg)
				}
			}
			if !rewrite {
				return
			}
			if err := os.WriteFile(path, []byte(Format(blocks, outs)), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// mismatch describes how out differs from block b's expected output, or
// returns "" when it does not.
func mismatch(path string, b Block, out string) string {
	if out == b.Want {
		return ""
	}
	return fmt.Sprintf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, b.Cmd.Line, b.Raw, out, b.Want)
}
