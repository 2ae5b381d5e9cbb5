package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestBenchCommandLineAsTyped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "overhead", "--quick"}, "fulcrum bench overhead --quick"},
		{[]string{"bench", "scalability", "--smoke", "--out", "/tmp/my results", "--callers", "1,4"}, "fulcrum bench scalability --callers 1,4 --out '/tmp/my results' --smoke"},
		{[]string{"bench", "all"}, "fulcrum bench all"},
	} {
		root := NewRoot()
		var got string
		cmd, _, err := root.Find(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		cmd.RunE = func(c *cobra.Command, _ []string) error { got = typedCommand(c); return nil }
		root.SetArgs(tc.args)
		root.SetOut(&bytes.Buffer{})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestBenchHelpListsTheExperiments(t *testing.T) {
	t.Parallel()
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"overhead", "scalability", "all", "--quick", "--smoke", "--out", "apt-get install haproxy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "bench-client") {
		t.Error("the hidden client command is listed")
	}
}
