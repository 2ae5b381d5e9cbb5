package rules

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestCompileBad(t *testing.T) {
	t.Parallel()
	ca, st := protocol.AffinityClientActivated, protocol.AffinitySingleton
	tests := []struct {
		name  string
		proto string
		rules []protocol.AffinityRule
		field string
		want  string // in the message
	}{
		{"missing kind", "http", []protocol.AffinityRule{{Match: "/a/{x}"}}, "affinity[0].kind", "is required"},
		{"unknown kind", "http", []protocol.AffinityRule{{Kind: "sticky", Match: "/a/{x}"}}, "affinity[0].kind", `"sticky"`},
		{"missing match", "http", []protocol.AffinityRule{{Kind: st}}, "affinity[0].match", "is required"},
		{"bad pattern", "http", []protocol.AffinityRule{{Kind: st, Match: "/a/{x"}}, "affinity[0].match", "ServeMux pattern"},
		{"equal patterns", "http", []protocol.AffinityRule{{Kind: st, Match: "/a/{x}"}, {Kind: ca, Match: "/a/{y}"}}, "affinity[1].match", `affinity[0].match "/a/{x}"`},
		{"conflicting patterns", "http", []protocol.AffinityRule{{Kind: st, Match: "/a/{x}/b"}, {Kind: st, Match: "/c/d"}, {Kind: st, Match: "/a/b/{y}"}}, "affinity[2].match", `affinity[0].match "/a/{x}/b"`},
		{"conflicting methods", "http", []protocol.AffinityRule{{Kind: st, Match: "/c"}, {Kind: st, Match: "GET /a/{x}"}, {Kind: st, Match: "/a/b"}}, "affinity[2].match", `affinity[1].match "GET /a/{x}"`},
		{"key not a wildcard", "http", []protocol.AffinityRule{{Kind: st, Match: "/a/{x}/{y}", Key: "z"}}, "affinity[0].key", "x, y"},
		{"key without wildcards", "http", []protocol.AffinityRule{{Kind: st, Match: "/a", Key: "z"}}, "affinity[0].key", "no wildcards"},
		{"cookie on singleton", "http", []protocol.AffinityRule{{Kind: st, Match: "/a/{x}", Cookie: "c"}}, "affinity[0].cookie", "client-activated"},
		{"bad cookie name", "http", []protocol.AffinityRule{{Kind: ca, Match: "/a/", Cookie: "a b"}}, "affinity[0].cookie", "token"},
		{"client-activated without a key", "http", []protocol.AffinityRule{{Kind: ca, Match: "/a"}}, "affinity[0].match", "wildcard"},
		{"timeout too short", "http", []protocol.AffinityRule{{Kind: ca, Match: "/a/{x}", Timeout: protocol.Duration(500e6)}}, "affinity[0].timeout", "[1s, 24h]"},
		{"max entries", "http", []protocol.AffinityRule{{Kind: ca, Match: "/a/{x}", MaxEntries: -1}}, "affinity[0].max_entries", "[1, 10000000]"},
		{"two tcp rules", "tcp", []protocol.AffinityRule{{Kind: st}, {Kind: ca}}, "affinity", "at most one rule"},
		{"tcp match", "tcp", []protocol.AffinityRule{{Kind: st, Match: "/a"}}, "affinity[0].match", "tcp group"},
		{"tcp cookie", "tcp", []protocol.AffinityRule{{Kind: ca, Cookie: "c"}}, "affinity[0].cookie", "tcp group"},
		{"giop", "giop", []protocol.AffinityRule{{Kind: st}}, "affinity", "tcp and http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tt.proto, tt.rules)
			var fe *protocol.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Compile: %v, want a *protocol.FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Compile: field %q, %q; want field %q containing %q", fe.Field, err, tt.field, tt.want)
			}
		})
	}
}

func TestCompileDefaultsAndMatch(t *testing.T) {
	t.Parallel()
	rules, err := Compile("http", []protocol.AffinityRule{
		{Kind: protocol.AffinitySingleton, Match: "/objects/{name}/{rest...}"},
		{Kind: protocol.AffinityClientActivated, Match: "/objects/special/{id}", Key: "id"},
		{Kind: protocol.AffinitySingleton, Match: "POST /config"},
		{Kind: protocol.AffinityClientActivated, Match: "/carts/", Cookie: "cart"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := rules.Rule(0); r.Key != "name" || r.Timeout != DefaultTimeout || r.MaxEntries != DefaultMaxEntries {
		t.Fatalf("rule 0 defaults: %+v", r)
	}
	tests := []struct {
		method, path string
		rule         int
		key          string
	}{
		{"GET", "/objects/a/b/c", 0, "a"},
		{"GET", "/objects/special/7", 1, "7"}, // more specific wins
		{"GET", "/objects/special/7/x", 0, "special"},
		{"POST", "/config", 2, ""},
		{"GET", "/config", -1, ""},
		{"GET", "/carts/1", 3, ""},
		{"GET", "/other", -1, ""},
		{"GET", "/objects/a/../b/c", -1, ""}, // ServeMux would redirect: single-call
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, "http://h"+tt.path, nil)
		r, key, ok := rules.Match(req)
		if req.Pattern != "" || req.PathValue("name") != "" {
			t.Errorf("%s %s: Match changed the request (pattern %q)", tt.method, tt.path, req.Pattern)
		}
		got := -1
		if ok {
			got = r.Index
		}
		if got != tt.rule || key != tt.key {
			t.Errorf("%s %s: rule %d key %q, want %d %q", tt.method, tt.path, got, key, tt.rule, tt.key)
		}
	}
	same, _ := Compile("http", []protocol.AffinityRule{
		{Kind: protocol.AffinitySingleton, Match: "/objects/{name}/{rest...}"},
		{Kind: protocol.AffinityClientActivated, Match: "/objects/special/{id}", Key: "id"},
		{Kind: protocol.AffinitySingleton, Match: "POST /config"},
		{Kind: protocol.AffinityClientActivated, Match: "/carts/", Cookie: "cart"},
	})
	other, _ := Compile("http", []protocol.AffinityRule{{Kind: protocol.AffinitySingleton, Match: "/objects/{name}/{rest...}"}})
	if !rules.Equal(same) || rules.Equal(other) || !(*Rules)(nil).Equal(nil) {
		t.Fatal("Equal: want equal rules equal and different ones not")
	}
}
