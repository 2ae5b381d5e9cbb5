package balancer

import (
	"fmt"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestNoticeBatches: queued bindings become one notice per group and
// term, in order of arrival, each client once (its last binding), split
// at protocol.MaxBoundMoves.
func TestNoticeBatches(t *testing.T) {
	t.Parallel()
	n := func(group string, term uint64, client, replica string) boundNotice {
		return boundNotice{group: group, term: term, move: protocol.BoundMove{Client: client, Replica: replica}}
	}
	got := noticeBatches([]boundNotice{
		n("a", 5, "c1", "r1"), n("b", 5, "c1", "r9"), n("a", 5, "c2", "r2"), n("a", 6, "c1", "r3"), n("a", 5, "c1", "r4"),
	})
	want := []string{"a/5 [c1>r4 c2>r2]", "b/5 [c1>r9]", "a/6 [c1>r3]"}
	if len(got) != len(want) {
		t.Fatalf("noticeBatches made %d notices %v, want %v", len(got), got, want)
	}
	for i, v := range got {
		s := fmt.Sprintf("%s/%d [", v.Group, v.Term)
		for j, m := range v.Moves {
			if j > 0 {
				s += " "
			}
			s += m.Client + ">" + m.Replica
		}
		s += "]"
		if s != want[i] {
			t.Errorf("notice %d = %s, want %s", i, s, want[i])
		}
	}
	var many []boundNotice
	for i := range protocol.MaxBoundMoves + 2 {
		many = append(many, n("a", 1, fmt.Sprint("c", i), "r"))
	}
	got = noticeBatches(many)
	if len(got) != 2 || len(got[0].Moves) != protocol.MaxBoundMoves || len(got[1].Moves) != 2 {
		t.Fatalf("%d bindings made notices of %d moves; want %d and 2", len(many), len(got), protocol.MaxBoundMoves)
	}
	for _, v := range got {
		if err := v.Validate(); err != nil {
			t.Fatalf("a notice made by noticeBatches does not validate: %v", err)
		}
	}
}
