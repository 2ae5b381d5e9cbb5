package bench

// RoundOrder is the order in which round r runs n interleaved
// configurations: row r mod 2n of a Williams design (E. J. Williams,
// "Experimental designs balanced for the estimation of residual effects of
// treatments", 1949). Over any 2n consecutive rounds every configuration
// runs in every position twice and directly after every other
// configuration twice, so neither its slot in the round nor what ran just
// before it (caches, a CPU's or a host's idle state left warm or cold)
// favours one configuration. A plain rotation (A B C, B C A, C A B)
// balances the positions only: B always runs right after A.
//
// Rows 0..n−1 are the base sequence 0, 1, n−1, 2, n−2, 3, … shifted by
// the row number (mod n), rows n..2n−1 the same rows reversed. For an even
// n the first n rows are already balanced; for an odd n it takes the
// reversed ones too.
func RoundOrder(n, r int) []int {
	if n <= 0 {
		return nil
	}
	r %= 2 * n
	if r < 0 {
		r += 2 * n
	}
	order := make([]int, n)
	for i := range n {
		base := (i + 1) / 2 // 0, 1, 1, 2, 2, …: 0, 1, n−1, 2, n−2, …
		if i > 0 && i%2 == 0 {
			base = n - i/2
		}
		order[i] = (base + r) % n
	}
	if r >= n {
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			order[i], order[j] = order[j], order[i]
		}
	}
	return order
}
