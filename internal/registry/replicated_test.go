package registry

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func replicatedGroup() protocol.Group {
	g := validGroup()
	g.Binding = protocol.BindingReplicated
	return g
}

func TestReplicatedDefaults(t *testing.T) {
	t.Parallel()
	g := WithDefaults(replicatedGroup())
	r := g.Replicated
	if r.MaxPayload != 1<<20 || r.MaxLogBytes != 256<<20 || r.SessionTTL.D() != 10*time.Minute || r.ReadOnly != nil {
		t.Errorf("defaults %+v, want 1MiB, 256MiB, 10m, no read-only routes", r)
	}
	if err := Validate(g); err != nil {
		t.Fatalf("a replicated group with defaults is refused: %v", err)
	}
	// Other bindings get no replicated block.
	if o := WithDefaults(validGroup()); o.Replicated.MaxPayload != 0 || o.Replicated.SessionTTL != 0 {
		t.Errorf("an on-demand group got a replicated block: %+v", o.Replicated)
	}
	for _, proto := range []string{protocol.ProtocolHTTP, protocol.ProtocolGIOP} {
		g := replicatedGroup()
		g.Protocol, g.Replicas = proto, nil
		g.Strategy = "round-robin" // any strategy: it picks for read-only routes only
		g.Replicated.ReadOnly = []string{"GET /value", "GET /balance/{rest...}", "POST /query", "GET /a/{id}", "GET /a/b"}
		if err := Validate(WithDefaults(g)); err != nil {
			t.Errorf("protocol %s: %v", proto, err)
		}
	}
}

func TestReplicatedRejects(t *testing.T) {
	t.Parallel()
	ro := func(ps ...string) func(*protocol.Group) {
		return func(g *protocol.Group) { g.Replicated.ReadOnly = ps }
	}
	tests := []struct {
		name   string
		mutate func(*protocol.Group)
		field  string
		want   string
	}{
		{"tcp", func(g *protocol.Group) { g.Protocol, g.Replicas = protocol.ProtocolTCP, nil }, "binding",
			`binding: invalid value "replicated", replicated is only allowed with protocol http or giop (the group's protocol is tcp)`},
		{"block without the binding", func(g *protocol.Group) {
			g.Binding = protocol.PerRequest
			g.Replicated.MaxPayload = 10
		}, "replicated", "is only allowed with binding replicated (the group's binding is per-request)"},
		{"read only without the binding", func(g *protocol.Group) {
			g.Binding = ""
			g.Replicated.ReadOnly = []string{"GET /x"}
		}, "replicated", "only allowed with binding replicated"},
		{"max payload above the log", func(g *protocol.Group) { g.Replicated.MaxPayload, g.Replicated.MaxLogBytes = 2<<20, 1<<20 },
			"replicated.max_log_bytes", "invalid value 1MiB, must be at least replicated.max_payload (2MiB)"},
		{"negative max payload", func(g *protocol.Group) { g.Replicated.MaxPayload = -1 }, "replicated.max_payload", "invalid value -1, must be a size in [1, 1GiB] bytes"},
		{"max payload too large", func(g *protocol.Group) { g.Replicated.MaxPayload, g.Replicated.MaxLogBytes = 2<<30, 4<<30 }, "replicated.max_payload", "invalid value 2GiB, must be a size in [1, 1GiB] bytes"},
		{"negative log", func(g *protocol.Group) { g.Replicated.MaxLogBytes = -5 }, "replicated.max_log_bytes", "invalid value -5, must be a size in [1, 1024GiB] bytes"},
		{"log too large", func(g *protocol.Group) { g.Replicated.MaxLogBytes = 2 << 40 }, "replicated.max_log_bytes", "must be a size in [1, 1024GiB] bytes"},
		{"session ttl short", func(g *protocol.Group) { g.Replicated.SessionTTL = protocol.Duration(time.Second) }, "replicated.session_ttl",
			`invalid value "1s", must be whole seconds in [2s, 168h0m0s]`},
		{"session ttl fraction", func(g *protocol.Group) { g.Replicated.SessionTTL = protocol.Duration(2500 * time.Millisecond) }, "replicated.session_ttl", "whole seconds"},
		{"no method", ro("GET /x", "/value"), "replicated.read_only[1]", `invalid value "/value", must be a ServeMux pattern "METHOD /path" such as "GET /value" or "GET /balance/{rest...}" (a method is required)`},
		{"host", ro("GET example.com/value"), "replicated.read_only[0]", "no host"},
		{"bad method", ro("G(T /value"), "replicated.read_only[0]", `method "G(T" is not an HTTP method token`},
		{"bad wildcard", ro("GET /a/{x"), "replicated.read_only[0]", "bad wildcard segment"},
		{"rest not last", ro("GET /a/{x...}/b"), "replicated.read_only[0]", "{...} wildcard not at end"},
		{"empty", ro(""), "replicated.read_only[0]", "a method is required"},
		{"two spaces", ro("GET  /x"), "replicated.read_only[0]", "must start with '/'"},
		{"duplicate", ro("GET /x", "POST /y", "GET /x"), "replicated.read_only[2]", "must be unique (also read_only[0])"},
		{"conflict", ro("GET /a/{x}/c", "GET /a/b/{y}"), "replicated.read_only[1]", `must not conflict with read_only[0] "GET /a/{x}/c"`},
		{"too long", ro("GET /" + strings.Repeat("a", 1100)), "replicated.read_only[0]", "at most 1024 bytes"},
		{"too many", ro(make([]string, MaxReadOnlyPatterns+1)...), "replicated.read_only", "at most 256 patterns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := replicatedGroup()
			tt.mutate(&g)
			err := Validate(WithDefaults(g))
			var fe *protocol.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *protocol.FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Error(), tt.want) {
				t.Fatalf("Validate() = field %q, %q; want field %q mentioning %q", fe.Field, fe.Error(), tt.field, tt.want)
			}
		})
	}
}

// Every bad read_only entry is reported, each by its index.
func TestReplicatedReadOnlyAll(t *testing.T) {
	t.Parallel()
	g := replicatedGroup()
	g.Replicated.ReadOnly = []string{"GET /ok", "nope", "GET /ok", "GET /{", "PUT /fine"}
	var fields []string
	for _, err := range ValidateAll(WithDefaults(g)) {
		fields = append(fields, err.(*protocol.FieldError).Field)
	}
	if got, want := strings.Join(fields, " "), "replicated.read_only[1] replicated.read_only[2] replicated.read_only[3]"; got != want {
		t.Errorf("fields %q, want %q", got, want)
	}
}

// FuzzReadOnlyPattern: no input panics, and what is accepted registers on
// a ServeMux.
func FuzzReadOnlyPattern(f *testing.F) {
	for _, s := range []string{"GET /value", "GET /balance/{rest...}", "/x", "GET /{", "GET /a/{x...}/b", "GET /{$}", "X /a/{b}/{b}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if checkReadOnlyPattern(p) != "" {
			return
		}
		if err := register(http.NewServeMux(), p); err != nil {
			t.Fatalf("accepted %q, which ServeMux refuses: %v", p, err)
		}
	})
}
