package testbed

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Link shapes a replica's link with tc's token bucket filter (tbf), the
// queueing discipline the ALBL paper used: a rate, a bucket of Burst bytes, and
// a queue bounded by the time a packet may wait in it (Latency).
//
// The qdisc sits on the replica's end of the veth pair, so it shapes
// what the replica sends: its responses, the direction that carries the
// data of a web or RPC server ("the traffic that passes from the first
// web server", the ALBL paper §5). A qdisc shapes only its device's egress
// (ingress can only be policed, which drops instead of queueing), so
// shaping the requests too takes a second tbf on the root namespace's
// end: set Both.
type Link struct {
	// Rate is tbf's rate, in tc's syntax: a number and a unit, e.g.
	// "500kbit", "10mbit", "1gbit", "100kbps" (bytes per second).
	// Required.
	Rate string
	// Burst is the bucket's size, in tc's syntax, e.g. "2kb", "1500b",
	// "32kbit". Required; at least one packet (MTU 1500) for traffic to
	// pass at all.
	Burst string
	// Latency bounds how long a packet may wait in the queue; packets
	// that would wait longer are dropped. Required, > 0.
	Latency time.Duration
	// Both also shapes the other direction (root → replica: the
	// requests) with the same parameters.
	Both bool
}

var (
	rateRe = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps|kibit|mibit|gibit|tibit|kibps|mibps|gibps|tibps)$`)
	sizeRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(b|k|kb|m|mb|g|gb|kbit|mbit|gbit)?$`)
)

func (l Link) check() error {
	m := rateRe.FindStringSubmatch(l.Rate)
	if m == nil {
		return fmt.Errorf("testbed: link rate %q: must be a number and a unit, e.g. 500kbit, 10mbit, 100kbps (bit, kbit, mbit, gbit, bps, kbps, mbps, ...)", l.Rate)
	}
	if f, err := strconv.ParseFloat(m[1], 64); err != nil || f <= 0 {
		return fmt.Errorf("testbed: link rate %q: must be > 0", l.Rate)
	}
	if !sizeRe.MatchString(l.Burst) {
		return fmt.Errorf("testbed: link burst %q: must be a size, e.g. 2kb, 1500b, 32kbit (b, kb, mb, gb, kbit, mbit, gbit)", l.Burst)
	}
	if l.Latency <= 0 {
		return fmt.Errorf("testbed: link latency %v: must be > 0", l.Latency)
	}
	return nil
}

// tbfArgs are the arguments of "tc qdisc add dev D root" after "root".
func (l Link) tbfArgs() []string {
	return []string{"tbf", "rate", l.Rate, "burst", l.Burst, "latency", strconv.FormatInt(l.Latency.Microseconds(), 10) + "us"}
}

// String is the link in tc's words.
func (l Link) String() string {
	s := fmt.Sprintf("tbf rate %s burst %s latency %v", l.Rate, l.Burst, l.Latency)
	if l.Both {
		s += " (both directions)"
	}
	return s
}
