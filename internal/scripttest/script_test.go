package scripttest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const sample = `# A comment before the first command,

# with a blank line inside.
set a b key=1 other=x=y
----
ok

# Two lines expected.
show
----
line 1
line 2

quiet n=3
----
`

func TestParse(t *testing.T) {
	t.Parallel()
	blocks, err := Parse("sample.txt", sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("%d blocks, want 3: %+v", len(blocks), blocks)
	}
	set := blocks[0]
	if want := []string{"# A comment before the first command,", "", "# with a blank line inside."}; !slices.Equal(set.Comments, want) {
		t.Errorf("comments %q, want %q", set.Comments, want)
	}
	c := set.Cmd
	if c.Line != 4 || c.Name != "set" || !slices.Equal(c.Pos, []string{"a", "b"}) || c.Arg(1) != "b" || c.Arg(2) != "" {
		t.Errorf("command %+v, want set on line 4 with a b", c)
	}
	if !slices.Equal(c.Order, []string{"key", "other"}) || c.Args["key"] != "1" || c.Args["other"] != "x=y" {
		t.Errorf("args %v in order %v, want key=1 other=x=y", c.Args, c.Order)
	}
	if set.Raw != "set a b key=1 other=x=y" || set.Want != "ok" {
		t.Errorf("raw %q want %q", set.Raw, set.Want)
	}
	if blocks[1].Want != "line 1\nline 2" || blocks[1].Cmd.Line != 9 || !slices.Equal(blocks[1].Comments, []string{"# Two lines expected."}) {
		t.Errorf("second block %+v", blocks[1])
	}
	if blocks[2].Want != "" || blocks[2].Cmd.Args["n"] != "3" || blocks[2].Comments != nil {
		t.Errorf("third block %+v", blocks[2])
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text, want string
	}{
		{"no separator", "cmd\nout\n", `bad.txt:1: command "cmd" must be followed by ----`},
		{"end after command", "ok\n----\n\ncmd", `bad.txt:4: command "cmd" must be followed by ----`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.txt", tc.text)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Formatting a parsed script with its own expected outputs gives the
// script back (with one blank line between blocks); with other outputs it
// gives those.
func TestFormat(t *testing.T) {
	t.Parallel()
	blocks, err := Parse("sample.txt", sample)
	if err != nil {
		t.Fatal(err)
	}
	wants := make([]string, len(blocks))
	for i, b := range blocks {
		wants[i] = b.Want
	}
	if got := Format(blocks, wants); got != sample {
		t.Errorf("Format with the expected outputs:\n%s\nwant:\n%s", got, sample)
	}
	got := Format(blocks, []string{"changed", "", "now\nprints"})
	again, err := Parse("formatted", got)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, b := range again {
		outs = append(outs, b.Want)
	}
	if !slices.Equal(outs, []string{"changed", "", "now\nprints"}) {
		t.Errorf("reformatted outputs %q:\n%s", outs, got)
	}
}

func TestMismatch(t *testing.T) {
	t.Parallel()
	blocks, err := Parse("sample.txt", sample)
	if err != nil {
		t.Fatal(err)
	}
	if msg := mismatch("sample.txt", blocks[1], "line 1\nline 2"); msg != "" {
		t.Errorf("mismatch for the expected output: %q", msg)
	}
	msg := mismatch("sample.txt", blocks[1], "line 1")
	if want := "sample.txt:9: show\ngot:\nline 1\nwant:\nline 1\nline 2"; msg != want {
		t.Errorf("mismatch %q, want %q", msg, want)
	}
}

// run gives each script a fresh runner and passes when the outputs are
// the expected ones; with rewrite it writes what the commands print.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	scripts := map[string]string{
		"one.txt": "echo a\n----\na\n\ncount\n----\n1\n",
		"two.txt": "# counts from 1 again\ncount\n----\n1\n",
	}
	for name, text := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runner := func(t *testing.T) func(Cmd) string {
		n := 0
		return func(c Cmd) string {
			switch c.Name {
			case "echo":
				return strings.Join(c.Pos, " ") + "\n"
			case "count":
				n++
				return strings.Repeat("x", n-1) + string(rune('0'+n))
			}
			t.Fatalf("line %d: unknown command %q", c.Line, c.Name)
			return ""
		}
	}
	t.Run("check", func(t *testing.T) {
		run(t, filepath.Join(dir, "*.txt"), false, runner)
	})
	// Rewriting with a runner that prints otherwise changes only the
	// expected outputs.
	t.Run("rewrite", func(t *testing.T) {
		run(t, filepath.Join(dir, "two.txt"), true, func(t *testing.T) func(Cmd) string {
			return func(c Cmd) string { return "now " + c.Name + "\n\n" }
		})
	})
	got, err := os.ReadFile(filepath.Join(dir, "two.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# counts from 1 again\ncount\n----\nnow count\n"; string(got) != want {
		t.Errorf("rewritten script %q, want %q", got, want)
	}
}

// The blank lines between a comment and its command are not part of the
// comment.
func TestParseCommentGap(t *testing.T) {
	t.Parallel()
	blocks, err := Parse("gap.txt", "# about cmd\n\n\ncmd\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 || !slices.Equal(blocks[0].Comments, []string{"# about cmd"}) || blocks[0].Cmd.Line != 4 {
		t.Errorf("blocks %+v, want cmd on line 4 with one comment line", blocks)
	}
}

func TestParseCmd(t *testing.T) {
	t.Parallel()
	c := ParseCmd("  strategy least-loaded seed=7  ")
	if c.Line != 0 || c.Name != "strategy" || c.Arg(0) != "least-loaded" || c.Args["seed"] != "7" || !slices.Equal(c.Order, []string{"seed"}) {
		t.Errorf("ParseCmd: %+v", c)
	}
	if c := ParseCmd(" "); c.Name != "" || len(c.Pos) != 0 || len(c.Args) != 0 {
		t.Errorf("ParseCmd of a blank line: %+v", c)
	}
}
