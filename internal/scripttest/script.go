package scripttest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Cmd is one parsed command line: its name, then positional arguments and
// key=value arguments in any order.
type Cmd struct {
	Line  int               // line number in the script, from 1
	Name  string            // the first word
	Pos   []string          // positional arguments
	Args  map[string]string // key=value arguments
	Order []string          // keys of Args in the order written
}

// Arg returns the i-th positional argument, or "" when there are fewer.
func (c Cmd) Arg(i int) string {
	if i < len(c.Pos) {
		return c.Pos[i]
	}
	return ""
}

// Block is a command with the comments before it and its expected output.
type Block struct {
	Comments []string // comment lines before the command, blank lines inside kept as ""
	Cmd      Cmd
	Raw      string // the command line as written, trimmed
	Want     string // the expected output, lines joined by "\n"
}

// ParseFile reads and parses the script at path.
func ParseFile(path string) ([]Block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(path, bufio.NewScanner(f))
}

// Parse parses a script's text; name is used in errors.
func Parse(name, text string) ([]Block, error) {
	return parse(name, bufio.NewScanner(strings.NewReader(text)))
}

func parse(name string, sc *bufio.Scanner) ([]Block, error) {
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	var blocks []Block
	var comments []string
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
		// The blank lines that end a comment run separate it from the
		// command.
		for len(comments) > 0 && comments[len(comments)-1] == "" {
			comments = comments[:len(comments)-1]
		}
		b := Block{Comments: comments, Raw: trimmed, Cmd: ParseCmd(trimmed)}
		b.Cmd.Line = lineNo
		comments = nil
		if sep, ok := next(); !ok || strings.TrimSpace(sep) != "----" {
			return nil, fmt.Errorf("%s:%d: command %q must be followed by ----", name, b.Cmd.Line, trimmed)
		}
		var want []string
		for {
			l, ok := next()
			if !ok || strings.TrimSpace(l) == "" {
				break
			}
			want = append(want, l)
		}
		b.Want = strings.Join(want, "\n")
		blocks = append(blocks, b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return blocks, nil
}

// ParseCmd parses one command line, for tests that run commands not read
// from a script; its Line is 0. A blank line gives a Cmd with no Name.
func ParseCmd(line string) Cmd {
	c := Cmd{Args: map[string]string{}}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return c
	}
	c.Name = fields[0]
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			c.Args[k] = v
			c.Order = append(c.Order, k)
		} else {
			c.Pos = append(c.Pos, f)
		}
	}
	return c
}

// Format returns the script of blocks with outs (one per block) as their
// expected output.
func Format(blocks []Block, outs []string) string {
	var b strings.Builder
	for i, bl := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, c := range bl.Comments {
			b.WriteString(c + "\n")
		}
		b.WriteString(bl.Raw + "\n----\n")
		if outs[i] != "" {
			b.WriteString(outs[i] + "\n")
		}
	}
	return b.String()
}
