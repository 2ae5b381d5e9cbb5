package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpOutside are phrases the help once used that mean nothing to someone
// with only the binary: the numbers of a paper collection that is not
// shipped, the project's issue tracker, paths outside the repository.
var helpOutside = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bseeds?\s+00\d`),
	regexp.MustCompile(`(?i)\bthe seeds\b`),
	regexp.MustCompile(`(?i)\bthe issue'?s?\b|\bissue \d`),
	regexp.MustCompile(`(?i)\bmain job\b`),
	regexp.MustCompile(`\.\./`),
}

// TestHelpStandsAlone reads every command's help (short and long text,
// examples, every flag's usage) and fails on any of helpOutside.
func TestHelpStandsAlone(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		texts := []string{c.Short, c.Long, c.Example}
		visit := func(f *pflag.Flag) { texts = append(texts, f.Usage) }
		c.LocalFlags().VisitAll(visit)
		c.PersistentFlags().VisitAll(visit)
		for _, text := range texts {
			for _, re := range helpOutside {
				if m := re.FindString(text); m != "" {
					t.Errorf("%q: help says %q: %s", c.CommandPath(), m, firstLineWith(text, m))
				}
			}
		}
		n++
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot())
	if n < 10 {
		t.Fatalf("walked %d commands, want the whole tree", n)
	}
}

func firstLineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return text
}
