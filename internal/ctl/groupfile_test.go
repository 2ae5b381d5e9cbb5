package ctl

import (
	"strings"
	"testing"
	"time"
)

func TestParseGroups(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		names []string
		err   string // substring; "" for success
	}{
		{"single yaml", "name: a\nfront_door: 127.0.0.1:0\nreport_interval: 250ms\n", []string{"a"}, ""},
		{"single json", `{"name":"a","front_door":"127.0.0.1:0","params":{"tolerance":1.2}}`, []string{"a"}, ""},
		{"groups list", "groups:\n  - name: a\n    front_door: :0\n  - name: b\n    front_door: :0\n", []string{"a", "b"}, ""},
		{"documents", "name: a\nfront_door: :0\n---\ngroups:\n  - name: b\n    front_door: :0\n", []string{"a", "b"}, ""},
		{"unknown key", "name: a\nfront_door: :0\nstrategyy: x\n", nil, "line 3"},
		{"unknown nested key", "name: a\nhealth:\n  intervall: 1s\n", nil, "line 3"},
		{"other keys beside groups", "admin: 127.0.0.1:7070\ngroups: []\n", nil, "admin"},
		{"bad duration", "name: a\nreport_interval: soon\n", nil, "soon"},
		{"no name", "front_door: :0\n", nil, "no name"},
		{"weight zero", "name: a\nreplicas:\n  - address: http://127.0.0.1:9001\n    weight: 0\n", nil, "replicas[0].weight: invalid value 0"},
		{"weight zero in a list", "groups:\n  - name: a\n  - name: b\n    replicas: [{address: http://x:1, weight: 2}, {address: http://x:2, weight: 0.0}]\n", nil, "groups[1].replicas[1].weight"},
		{"weight zero in json", `{"name":"a","replicas":[{"address":"http://x:1","weight":0}]}`, nil, "leave weight out"},
		{"not a mapping", "- a\n- b\n", nil, "line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gs, err := parseGroups([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, g := range gs {
				names = append(names, g.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.names, ",") {
				t.Fatalf("groups %v, want %v", names, tc.names)
			}
		})
	}
	gs, err := parseGroups([]byte("name: a\nreport_interval: 250ms\nparams: {tolerance: 1.2}\n"))
	if err != nil || gs[0].ReportInterval.D() != 250*time.Millisecond || gs[0].Params["tolerance"] != 1.2 {
		t.Fatalf("decoded %+v, %v", gs, err)
	}
}

func TestAPIErrorText(t *testing.T) {
	t.Parallel()
	e := &APIError{Status: 400, Code: "invalid_value", Message: "params.dampening: invalid value 1.5, must be in [0,1)", Field: "params.dampening", Allowed: "must be in [0,1)"}
	if got := e.Error(); got != "params.dampening: invalid value 1.5, must be in [0,1) [400 invalid_value]" {
		t.Errorf("got %q", got)
	}
	e = &APIError{Status: 400, Code: "invalid_json", Message: "bad body", Field: "weight", Allowed: "must be a number"}
	if got := e.Error(); got != "bad body (field weight: must be a number) [400 invalid_json]" {
		t.Errorf("got %q", got)
	}
}

func TestNum(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{0: "0", 2: "2", 1.5: "1.5", 1.25: "1.25", 1.256: "1.26", 100.001: "100"} {
		if got := num(in); got != want {
			t.Errorf("num(%v) = %q, want %q", in, got, want)
		}
	}
}
