package bench

import (
	"slices"
	"testing"
)

// Over 2n rounds, every configuration runs twice in every position and
// twice right after every other one; each round is a permutation.
func TestRoundOrderIsBalanced(t *testing.T) {
	for n := 1; n <= 9; n++ {
		pos := make([][]int, n)  // pos[c][p]: rounds with c at position p
		next := make([][]int, n) // next[a][b]: rounds with b right after a
		for c := range n {
			pos[c], next[c] = make([]int, n), make([]int, n)
		}
		for r := range 2 * n {
			o := RoundOrder(n, r)
			s := slices.Sorted(slices.Values(o))
			for i := range n {
				if s[i] != i {
					t.Fatalf("n=%d round %d: %v is not a permutation of 0..%d", n, r, o, n-1)
				}
			}
			for p, c := range o {
				pos[c][p]++
				if p > 0 {
					next[o[p-1]][c]++
				}
			}
		}
		for a := range n {
			for b := range n {
				if pos[a][b] != 2 {
					t.Errorf("n=%d: configuration %d ran %d times at position %d over %d rounds, want 2", n, a, pos[a][b], b, 2*n)
				}
				want := 2
				if a == b {
					want = 0
				}
				if next[a][b] != want {
					t.Errorf("n=%d: %d ran right after %d %d times over %d rounds, want %d", n, b, a, next[a][b], 2*n, want)
				}
			}
		}
	}
}

func TestRoundOrderRowsRepeatAndStartAtZero(t *testing.T) {
	if got := RoundOrder(4, 0); !slices.Equal(got, []int{0, 1, 3, 2}) {
		t.Errorf("RoundOrder(4, 0) = %v, want the Williams base 0 1 3 2", got)
	}
	if got, want := RoundOrder(5, 12), RoundOrder(5, 2); !slices.Equal(got, want) {
		t.Errorf("RoundOrder(5, 12) = %v, want row 2 again %v", got, want)
	}
	if got := RoundOrder(0, 3); got != nil {
		t.Errorf("RoundOrder(0, 3) = %v, want nil", got)
	}
}
