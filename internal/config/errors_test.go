package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Every problem of a file is reported at once, in line order; a value of
// the wrong type skips the checks that depend on it.
func TestParseReportsEveryError(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"validation after a tree problem, in line order",
			"log_level: loud\n" + // 1: validation
				"admn: x\n" + // 2: unknown key
				"groups:\n" +
				"  - name: a\n" +
				"    front_door: 127.0.0.1:8000\n" +
				"    binding: sometimes\n" + // 6: validation
				"    max_inflight: lots\n" + // 7: wrong type
				"  - name: b\n" +
				"    front_door: 127.0.0.1:8000\n" + // 9: same listener
				"shutdown_timeout: forever\n", // 10: wrong type
			[]string{
				`fulcrum.yaml:1: log_level: invalid value "loud", must be one of: debug, info, warn, error`,
				`fulcrum.yaml:2: admn: unknown key, allowed keys: `,
				`fulcrum.yaml:6: groups[0].binding: invalid value "sometimes", must be one of: per-session, on-demand, per-request`,
				`fulcrum.yaml:7: groups[0].max_inflight: invalid value "lots", must be an integer`,
				`fulcrum.yaml:9: groups[1].front_door: invalid value "127.0.0.1:8000", must not be an address another listener uses (groups[0] listens on 127.0.0.1:8000)`,
				`fulcrum.yaml:10: shutdown_timeout: invalid value "forever", must be a Go duration such as "500ms" or "2s"`,
			}},
		{"a wrong-typed group skips its checks, the next is checked",
			"groups:\n  - prime\n  - name: b\n    front_door: 127.0.0.1:8001\n    binding: never\n",
			[]string{
				`fulcrum.yaml:2: groups[0]: invalid value "prime", must be a mapping with keys: `,
				`fulcrum.yaml:5: groups[1].binding: invalid value "never", must be one of: `,
			}},
		{"a wrong-typed front door is not also missing",
			"groups:\n  - name: a\n    front_door: [x]\n    strategy: fastest\n",
			[]string{
				`fulcrum.yaml:3: groups[0].front_door: invalid value (a list), must be a string`,
				`fulcrum.yaml:4: groups[0].strategy: invalid value "fastest", must be one of: `,
			}},
		{"every problem of a group",
			"groups:\n  - name: A\n    front_door: 127.0.0.1:8000\n    binding: sometimes\n    health: {interval: 1ms, timeout: 1h}\n    replicas: [{address: 'ftp://x'}]\n",
			[]string{
				`fulcrum.yaml:2: groups[0].name: invalid value "A", must match `,
				`fulcrum.yaml:4: groups[0].binding: invalid value "sometimes", must be one of: `,
				`fulcrum.yaml:5: groups[0].health.interval: invalid value "1ms", must be a duration in [10ms, 1h0m0s]`,
				`fulcrum.yaml:6: groups[0].replicas[0].address: invalid value "ftp://x", must be an absolute http:// or https:// URL`,
			}},
		{"a misspelt key is not also missing",
			"groups:\n  - name: a\n    frontdoor: 127.0.0.1:8000\n  - name: a\n    front_door: 127.0.0.1:8001\n",
			[]string{
				`fulcrum.yaml:3: groups[0].frontdoor: unknown key, allowed keys: `,
				`fulcrum.yaml:4: groups[1].name: invalid value "a", must be unique among groups (groups[0] has it too)`,
			}},
		{"a syntax error ends the list",
			"log_level: loud\ngroups: [{name: a\n",
			[]string{`fulcrum.yaml:1: syntax error: `}}, // the line where the broken construct began
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("fulcrum.yaml", []byte(tc.in))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("Parse = %v (%T), want config.Errors", err, err)
			}
			lines := es.Lines()
			if len(lines) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(lines), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, lines[i], w)
				}
			}
		})
	}
}

// At most MaxReported lines, then how many more.
func TestErrorsCapped(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range MaxReported + 7 {
		fmt.Fprintf(&b, "key%d: x\n", i)
	}
	_, err := Parse("fulcrum.yaml", []byte(b.String()))
	var es Errors
	if !errors.As(err, &es) || len(es) != MaxReported+7 {
		t.Fatalf("Parse = %d errors, want %d: %v", len(es), MaxReported+7, err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxReported+1 || lines[MaxReported] != "… and 7 more" {
		t.Fatalf("%d lines, last %q; want %d and \"… and 7 more\"", len(lines), lines[len(lines)-1], MaxReported+1)
	}
	if !strings.HasPrefix(lines[0], "fulcrum.yaml:1: key0: unknown key") || !strings.HasPrefix(lines[MaxReported-1], fmt.Sprintf("fulcrum.yaml:%d: key%d: ", MaxReported, MaxReported-1)) {
		t.Fatalf("not in line order:\n%s", err)
	}
}

// A Check's problems are reported with the line of the key they name, and
// only for a file without other problems.
func TestParseChecks(t *testing.T) {
	t.Parallel()
	const in = "groups:\n  - name: a\n    front_door: 127.0.0.1:8000\n    replica_tls:\n      ca: /nowhere/ca.pem\n"
	calls := 0
	check := func(f File) []error {
		calls++
		return []error{&protocol.FieldError{Field: "groups[0].replica_tls.ca", Value: f.Groups[0].ReplicaTLS.CA, Allowed: "must be a readable PEM certificate file"}}
	}
	_, err := Parse("fulcrum.yaml", []byte(in), check)
	want := `fulcrum.yaml:5: groups[0].replica_tls.ca: invalid value "/nowhere/ca.pem", must be a readable PEM certificate file`
	if err == nil || err.Error() != want {
		t.Errorf("Parse with a check = %v, want %s", err, want)
	}
	_, err = Parse("fulcrum.yaml", []byte(in+"log_level: loud\n"), check)
	if calls != 1 || err == nil || strings.Contains(err.Error(), "replica_tls") {
		t.Errorf("a file with another problem: check ran %d times, error %v; want the check not run", calls, err)
	}
}
