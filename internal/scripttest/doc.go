// Package scripttest runs scenario scripts: data-driven tests in which a
// file of commands, each followed by its expected output, drives a
// package's code. It parses and rewrites the files and runs them; each
// test package keeps its own commands, as a function from a parsed Cmd to
// the text it prints.
//
// A script is blocks of
//
//	command arg key=value ...
//	----
//	expected output
//
// separated by blank lines; lines starting with # outside blocks are
// comments, kept with the block they precede when a script is rewritten.
//
// A test package runs its testdata/*.txt scripts with
//
//	func TestScenarios(t *testing.T) {
//		scripttest.Run(t, "testdata/*.txt", func(t *testing.T) func(scripttest.Cmd) string {
//			w := newWorld(t) // fresh state for each script
//			return w.run
//		})
//	}
//
// and go test -run TestScenarios -rewrite rewrites the expected output
// from what the commands print now. The package defines the -rewrite flag:
// a test package that imports it must not define its own.
package scripttest
