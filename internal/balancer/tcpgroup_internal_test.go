package balancer

import (
	"fmt"
	"math"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// connectionRates gives each client address its share of the replica's
// bytes times the load, busiest first, leaving out clients with no bytes
// and listing nothing for a load that is not positive and finite.
func TestConnectionRates(t *testing.T) {
	t.Parallel()
	many := map[string]uint64{}
	for i := range protocol.MaxReportClients + 5 {
		many[fmt.Sprintf("10.0.%d.%d", i/256, i%256)] = uint64(i + 1)
	}
	tests := []struct {
		name     string
		load     float64
		total    uint64
		byClient map[string]uint64
		want     []protocol.ClientRate
		wantLen  int
	}{
		{name: "shares of the load", load: 10, total: 1000, byClient: map[string]uint64{"10.0.0.1": 300, "10.0.0.2": 500},
			want: []protocol.ClientRate{{ID: "10.0.0.2", Rate: 5}, {ID: "10.0.0.1", Rate: 3}}},
		{name: "closed connections' bytes are nobody's", load: 4, total: 400, byClient: map[string]uint64{"10.0.0.1": 100},
			want: []protocol.ClientRate{{ID: "10.0.0.1", Rate: 1}}},
		{name: "total below the clients' sum counts as the sum", load: 6, total: 10, byClient: map[string]uint64{"a": 100, "b": 200},
			want: []protocol.ClientRate{{ID: "b", Rate: 4}, {ID: "a", Rate: 2}}},
		{name: "ties by address", load: 2, total: 20, byClient: map[string]uint64{"b": 10, "a": 10},
			want: []protocol.ClientRate{{ID: "a", Rate: 1}, {ID: "b", Rate: 1}}},
		{name: "idle clients are left out", load: 1, total: 50, byClient: map[string]uint64{"a": 0, "b": 50},
			want: []protocol.ClientRate{{ID: "b", Rate: 1}}},
		{name: "no bytes", load: 1, total: 0, byClient: map[string]uint64{"a": 0}},
		{name: "zero load", load: 0, total: 10, byClient: map[string]uint64{"a": 10}},
		{name: "NaN load", load: math.NaN(), total: 10, byClient: map[string]uint64{"a": 10}},
		{name: "infinite load", load: math.Inf(1), total: 10, byClient: map[string]uint64{"a": 10}},
		{name: "at most MaxReportClients", load: 1, total: 1, byClient: many, wantLen: protocol.MaxReportClients},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := connectionRates(tc.load, tc.total, tc.byClient)
			if tc.wantLen > 0 {
				if len(got) != tc.wantLen {
					t.Fatalf("%d clients, want %d", len(got), tc.wantLen)
				}
				for i := 1; i < len(got); i++ {
					if got[i].Rate > got[i-1].Rate {
						t.Fatalf("client %d's rate %v above the one before, %v: not busiest first", i, got[i].Rate, got[i-1].Rate)
					}
				}
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("connectionRates = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].ID != tc.want[i].ID || math.Abs(got[i].Rate-tc.want[i].Rate) > 1e-9 {
					t.Fatalf("connectionRates = %v, want %v", got, tc.want)
				}
			}
		})
	}
}
