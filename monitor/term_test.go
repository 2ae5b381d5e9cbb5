package monitor

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestAdmitTerm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		highest   uint64
		term      uint64
		wantAdmit bool
		wantNext  uint64
	}{
		{name: "single node: term 0 after term 0", highest: 0, term: 0, wantAdmit: true, wantNext: 0},
		{name: "first term seen", highest: 0, term: 7, wantAdmit: true, wantNext: 7},
		{name: "same term", highest: 7, term: 7, wantAdmit: true, wantNext: 7},
		{name: "newer term raises the highest", highest: 7, term: 9, wantAdmit: true, wantNext: 9},
		{name: "older term ignored", highest: 9, term: 7, wantAdmit: false, wantNext: 9},
		{name: "term 0 after a cluster term ignored", highest: 3, term: 0, wantAdmit: false, wantNext: 3},
		{name: "largest term", highest: 1, term: ^uint64(0), wantAdmit: true, wantNext: ^uint64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			admit, next := admitTerm(tt.highest, tt.term)
			if admit != tt.wantAdmit || next != tt.wantNext {
				t.Fatalf("admitTerm(%d, %d) = %v, %d; want %v, %d", tt.highest, tt.term, admit, next, tt.wantAdmit, tt.wantNext)
			}
		})
	}
}

func TestSameAdvisoryIsLevelTermAndEpoch(t *testing.T) {
	t.Parallel()
	base := protocol.Advisory{Advisory: protocol.High, Term: 4, Epoch: 2, Shed: 3}
	tests := []struct {
		name string
		b    protocol.Advisory
		want bool
	}{
		{name: "identical", b: base, want: true},
		{name: "shed and clients do not identify", b: protocol.Advisory{Advisory: protocol.High, Term: 4, Epoch: 2, Shed: 9, Clients: []string{"c"}}, want: true},
		{name: "another epoch in the term", b: protocol.Advisory{Advisory: protocol.High, Term: 4, Epoch: 3}, want: false},
		{name: "same epoch in another term", b: protocol.Advisory{Advisory: protocol.High, Term: 5, Epoch: 2}, want: false},
		{name: "another level", b: protocol.Advisory{Advisory: protocol.Drain, Term: 4, Epoch: 2}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sameAdvisory(base, tt.b); got != tt.want {
				t.Fatalf("sameAdvisory(%+v, %+v) = %v, want %v", base, tt.b, got, tt.want)
			}
		})
	}
}
