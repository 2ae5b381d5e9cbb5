package config

import (
	"errors"
	"testing"
)

// TestParseAffinityBad: the registry's affinity errors carry the file and
// the line of the rule's field.
func TestParseAffinityBad(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	perRequest := "binding: per-request\n    affinity:\n      - {kind: singleton, match: \"/objects/{name}/{rest...}\"}\n"
	tests := []struct {
		name string
		in   string
		line int
		key  string
		want string
	}{
		{"overlapping patterns", edit("binding: on-demand", perRequest+"      - kind: client-activated\n        match: \"/objects/{id}/{more...}\""), 10, "groups[0].affinity[1].match",
			`fulcrum.yaml:10: groups[0].affinity[1].match: invalid value "/objects/{id}/{more...}", overlaps affinity[0].match "/objects/{name}/{rest...}": the two patterns are equal or neither is more specific (ServeMux); give them an order`},
		{"unparsable pattern", edit("binding: on-demand", "binding: per-request\n    affinity:\n      - kind: singleton\n        match: \"/objects/{name\""), 9, "groups[0].affinity[0].match",
			`fulcrum.yaml:9: groups[0].affinity[0].match: invalid value "/objects/{name", must be an http.ServeMux pattern ([METHOD ][HOST]/PATH): at offset 9: bad wildcard segment (must end with '}')`},
		{"key not a wildcard", edit("binding: on-demand", "binding: per-request\n    affinity:\n      - kind: singleton\n        match: /objects/{name}\n        key: id"), 10, "groups[0].affinity[0].key",
			`fulcrum.yaml:10: groups[0].affinity[0].key: invalid value "id", must name a wildcard of match, one of the pattern's wildcards: name`},
		{"rules on an on-demand group", edit("binding: on-demand", "binding: on-demand\n    affinity:\n      - {kind: singleton, match: /a}"), 7, "groups[0].affinity",
			`fulcrum.yaml:7: groups[0].affinity: invalid value (a list), applies to tcp groups and per-request http groups only (binding is on-demand: the binding already keeps a client on its replica)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("fulcrum.yaml", []byte(tc.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse: %v, want a *config.Error\ninput:\n%s", err, tc.in)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
			if e.Line != tc.line || e.Key != tc.key {
				t.Errorf("at line %d key %q, want line %d key %q", e.Line, e.Key, tc.line, tc.key)
			}
		})
	}
	good := edit("binding: on-demand", perRequest+"      - {kind: client-activated, match: \"/carts/{id}\", timeout: 30s}")
	if _, err := Parse("fulcrum.yaml", []byte(good)); err != nil {
		t.Fatalf("valid rules: %v", err)
	}
}
