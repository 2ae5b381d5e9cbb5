package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestBoundMovesValidate(t *testing.T) {
	t.Parallel()
	ok := BoundMoves{Group: "prime", Term: 7, Moves: []BoundMove{{Client: "c1", Replica: "r-1"}, {Client: "c2", Replica: "r-2"}}}
	for _, tc := range []struct {
		name  string
		edit  func(*BoundMoves)
		field string
	}{
		{"valid", func(*BoundMoves) {}, ""},
		{"no group", func(v *BoundMoves) { v.Group = "" }, "group"},
		{"term 0", func(v *BoundMoves) { v.Term = 0 }, "term"},
		{"no moves", func(v *BoundMoves) { v.Moves = nil }, "moves"},
		{"too many", func(v *BoundMoves) { v.Moves = make([]BoundMove, MaxBoundMoves+1) }, "moves"},
		{"no client", func(v *BoundMoves) { v.Moves[1].Client = "" }, "moves[1].client"},
		{"long client", func(v *BoundMoves) { v.Moves[0].Client = strings.Repeat("c", maxBoundID+1) }, "moves[0].client"},
		{"client twice", func(v *BoundMoves) { v.Moves[1].Client = "c1" }, "moves[1].client"},
		{"no replica", func(v *BoundMoves) { v.Moves[0].Replica = "" }, "moves[0].replica"},
		{"long replica", func(v *BoundMoves) { v.Moves[1].Replica = strings.Repeat("r", maxBoundID+1) }, "moves[1].replica"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := ok
			v.Moves = append([]BoundMove(nil), ok.Moves...)
			tc.edit(&v)
			err := v.Validate()
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("valid notice refused: %v", err)
			case tc.field == "":
			case !errors.As(err, &fe) || fe.Field != tc.field:
				t.Fatalf("Validate = %v, want a *FieldError naming %s", err, tc.field)
			}
		})
	}
}
