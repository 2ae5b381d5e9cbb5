package balancer

import (
	"slices"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestDifferingFields(t *testing.T) {
	t.Parallel()
	base := protocol.Group{Name: "g", FrontDoor: "127.0.0.1:9000", Binding: protocol.PerRequest, Strategy: "round-robin", Source: protocol.SourceAPI}
	tests := []struct {
		name   string
		change func(*protocol.Group)
		want   []string
	}{
		{"equal", func(*protocol.Group) {}, nil},
		{"source is not compared", func(g *protocol.Group) { g.Source = protocol.SourceConfig }, nil},
		{"one field", func(g *protocol.Group) { g.Strategy = "random" }, []string{"strategy"}},
		{"two fields, sorted", func(g *protocol.Group) { g.FrontDoor = "127.0.0.1:9001"; g.Binding = protocol.OnDemand }, []string{"binding", "front_door"}},
		{"a field only one side sets", func(g *protocol.Group) { g.MaxInflight = 5 }, []string{"max_inflight"}},
		{"1 and 1.0 are equal", func(g *protocol.Group) { g.Params = map[string]any{"x": 1.0} }, []string{"params"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := base
			tc.change(&d)
			if got := differingFields(base, d); !slices.Equal(got, tc.want) {
				t.Errorf("differingFields = %v, want %v", got, tc.want)
			}
			if got := differingFields(d, base); !slices.Equal(got, tc.want) {
				t.Errorf("differingFields reversed = %v, want %v", got, tc.want)
			}
		})
	}
	a, b := base, base
	a.Params, b.Params = map[string]any{"x": 1}, map[string]any{"x": 1.0}
	if got := differingFields(a, b); got != nil {
		t.Errorf("params 1 and 1.0: %v, want equal", got)
	}
}
