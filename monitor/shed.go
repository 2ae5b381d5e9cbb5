package monitor

import "github.com/fulcrum-lb/fulcrum/protocol"

// shedEpsilon absorbs rounding in rate sums.
const shedEpsilon = 1e-9

// chooseShed picks the bound clients to send back so that their rates add
// up as closely as it can to target (calls/s). rates must be sorted busiest
// first. It goes through the clients busiest first and takes each one that
// still fits in what is left to move; if that leaves some of the target
// unmoved, it adds the one skipped client whose move brings the total
// closest to the target, if any brings it closer. Busy clients thus go
// first, and a client far busier than the whole target is not moved for a
// small shed.
func chooseShed(rates []protocol.ClientRate, target float64) []string {
	if target <= 0 {
		return nil
	}
	var chosen []string
	left := target
	skipped := -1 // the least busy client skipped for being too big
	for i, c := range rates {
		if left <= shedEpsilon {
			break
		}
		if c.Rate <= 0 {
			break // sorted: no rate left to move
		}
		if c.Rate <= left+shedEpsilon {
			chosen = append(chosen, c.ID)
			left -= c.Rate
			continue
		}
		skipped = i
	}
	// A skipped client overshoots by rate-left; moving it helps when that
	// is less than the left-over: rate < 2·left.
	if left > shedEpsilon && skipped >= 0 && rates[skipped].Rate < 2*left {
		chosen = append(chosen, rates[skipped].ID)
	}
	return chosen
}
