package balancer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestPlanReload(t *testing.T) {
	t.Parallel()
	spec := func(name, strat string, src string) protocol.Group {
		g := registry.WithDefaults(protocol.Group{Name: name, FrontDoor: "127.0.0.1:0", Strategy: strat})
		g.Source = src
		return g
	}
	ll, rr := strategy.LeastLoadedName, strategy.RoundRobinName
	cfg, api := protocol.SourceConfig, protocol.SourceAPI
	file := func(gs ...protocol.Group) []protocol.Group { return gs }
	decl := func(name, strat string) protocol.Group {
		return protocol.Group{Name: name, FrontDoor: "127.0.0.1:0", Strategy: strat}
	}
	tests := []struct {
		name    string
		running []protocol.Group
		last    []protocol.Group
		file    []protocol.Group
		want    string // "name:kind ..." of apply, then "- removed..."
	}{
		{"equal config group untouched", []protocol.Group{spec("a", ll, cfg)}, []protocol.Group{spec("a", ll, cfg)}, file(decl("a", ll)), "-"},
		{"new group added", nil, nil, file(decl("a", ll)), "a:add -"},
		{"changed in the file", []protocol.Group{spec("a", ll, cfg)}, []protocol.Group{spec("a", ll, cfg)}, file(decl("a", rr)), "a:file -"},
		{"changed through the API, reverted", []protocol.Group{spec("a", rr, cfg)}, []protocol.Group{spec("a", ll, cfg)}, file(decl("a", ll)), "a:revert -"},
		{"changed through the API and in the file", []protocol.Group{spec("a", rr, cfg)}, []protocol.Group{spec("a", ll, cfg)}, file(decl("a", "random")), "a:revert -"},
		{"API group of a declared name, other settings", []protocol.Group{spec("a", rr, api)}, nil, file(decl("a", ll)), "a:revert -"},
		{"API group of a declared name, same settings", []protocol.Group{spec("a", ll, api)}, nil, file(decl("a", ll)), "a:takeover -"},
		{"config group no longer declared removed, API group kept",
			[]protocol.Group{spec("a", ll, cfg), spec("b", ll, cfg), spec("x", ll, api)}, []protocol.Group{spec("a", ll, cfg), spec("b", ll, cfg)},
			file(decl("a", ll)), "- b"},
	}
	kinds := map[stepKind]string{stepAdd: "add", stepFileChange: "file", stepRevert: "revert", stepTakeOver: "takeover"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			running := map[string]runningGroup{}
			for _, g := range tc.running {
				running[g.Name] = runningGroup{spec: g, fromConfig: g.Source == protocol.SourceConfig}
			}
			last := map[string]protocol.Group{}
			for _, g := range tc.last {
				last[g.Name] = g
			}
			p := planReload(running, last, tc.file)
			if len(p.problems) != 0 {
				t.Fatalf("problems: %v", p.problems)
			}
			var parts []string
			for _, s := range p.apply {
				parts = append(parts, s.gs.Name+":"+kinds[s.kind])
			}
			parts = append(parts, strings.TrimSpace("- "+strings.Join(p.removed, " ")))
			if got := strings.Join(parts, " "); got != tc.want {
				t.Errorf("plan %q, want %q", got, tc.want)
			}
		})
	}
}

// Every invalid declared group is a problem, and none is applied.
func TestPlanReloadProblems(t *testing.T) {
	t.Parallel()
	var file []protocol.Group
	for i, b := range []string{"sometimes", protocol.OnDemand, "never"} {
		file = append(file, protocol.Group{Name: fmt.Sprintf("g%d", i), FrontDoor: "127.0.0.1:0", Binding: b})
	}
	p := planReload(nil, nil, file)
	var names []string
	for _, s := range p.apply {
		names = append(names, s.gs.Name)
	}
	if len(p.problems) != 2 || !strings.HasPrefix(p.problems[0].Error(), "group g0: ") || !strings.HasPrefix(p.problems[1].Error(), "group g2: ") || !slices.Equal(names, []string{"g1"}) {
		t.Errorf("problems %v, apply %v; want g0 and g2 refused, g1 planned", p.problems, names)
	}
}

// A change of binding to or from replicated, or of the replicated block,
// is a change the reload applies, and one that replaces the front door.
func TestPlanReloadReplicated(t *testing.T) {
	t.Parallel()
	decl := func(binding string, r protocol.Replicated) protocol.Group {
		return protocol.Group{Name: "a", FrontDoor: "127.0.0.1:0", Binding: binding, Replicated: r}
	}
	running := func(g protocol.Group) map[string]runningGroup {
		g = registry.WithDefaults(g)
		g.Source = protocol.SourceConfig
		return map[string]runningGroup{g.Name: {spec: g, fromConfig: true}}
	}
	last := func(g protocol.Group) map[string]protocol.Group {
		g = registry.WithDefaults(g)
		g.Source = protocol.SourceConfig
		return map[string]protocol.Group{g.Name: g}
	}
	plain := decl(protocol.OnDemand, protocol.Replicated{})
	repl := decl(protocol.BindingReplicated, protocol.Replicated{})
	bigger := decl(protocol.BindingReplicated, protocol.Replicated{MaxPayload: 2 << 20})
	reads := decl(protocol.BindingReplicated, protocol.Replicated{ReadOnly: []string{"GET /value"}})
	tests := []struct {
		name     string
		from, to protocol.Group
		apply    bool
		newDoor  bool
	}{
		{"to replicated", plain, repl, true, true},
		{"from replicated", repl, plain, true, true},
		{"max payload", repl, bigger, true, true},
		{"read-only routes", repl, reads, true, true},
		// The defaults written out: untouched.
		{"defaults written out", repl, decl(protocol.BindingReplicated, protocol.Replicated{MaxPayload: 1 << 20, SessionTTL: protocol.Duration(10 * time.Minute)}), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := planReload(running(tc.from), last(tc.from), []protocol.Group{tc.to})
			if len(p.problems) != 0 {
				t.Fatalf("problems: %v", p.problems)
			}
			if got := len(p.apply) == 1 && p.apply[0].kind == stepFileChange; got != tc.apply {
				t.Errorf("applied as a file change: %v, want %v (plan %+v)", got, tc.apply, p.apply)
			}
			if got := needsNewFrontDoor(registry.WithDefaults(tc.from), registry.WithDefaults(tc.to)); got != tc.newDoor {
				t.Errorf("needsNewFrontDoor = %v, want %v", got, tc.newDoor)
			}
		})
	}
}
