package strategy

import "time"

// The probing seam: strategies that decide from active measurements of the
// replicas (albl, prequal) say what to measure and how often; the balancer
// does the I/O (internal/balancer/probe.go) and feeds the results back.
// Strategies stay free of net and of the clock: they only see results.

// ProbeKind is what one probe measures.
type ProbeKind uint8

const (
	// ProbeTCPConnect times a TCP connection to the replica's host and
	// port: the SYN → SYN-ACK round trip as connect() sees it. The
	// connection is closed at once.
	ProbeTCPConnect ProbeKind = iota + 1
	// ProbeHTTPGet times GET Path on a fresh connection, from the dial to
	// the last byte of the body. Any answer below 500 is a reply.
	ProbeHTTPGet
	// ProbeLoad GETs Path and reads the replica's load answer
	// (protocol.LoadProbe: requests in flight and a latency estimate).
	ProbeLoad
)

// String names the kind as scenario scripts and logs write it.
func (k ProbeKind) String() string {
	switch k {
	case ProbeTCPConnect:
		return "tcp"
	case ProbeHTTPGet:
		return "http"
	case ProbeLoad:
		return "load"
	}
	return "unknown"
}

// Probe is one measurement a Prober asks for on each replica it targets.
type Probe struct {
	Kind ProbeKind
	// Path is what ProbeHTTPGet and ProbeLoad GET, below the replica's
	// base URL.
	Path string
	// Timeout bounds the probe; a probe not done in time failed.
	Timeout time.Duration
}

// ProbeSpec says what a Prober wants measured and how often.
type ProbeSpec struct {
	// Period is the time between the starts of two rounds (> 0).
	Period time.Duration
	// Probes run concurrently on every replica a round targets. None: the
	// balancer only rebuilds the picker every Period (for weights that
	// change with time, as weighted-round-robin-orca's).
	Probes []Probe
	// Async feeds each replica's results as soon as its probes end, and a
	// replica with a probe still out is not probed again; the picker is
	// not rebuilt (the strategy's pickers read state the results update).
	// Otherwise a round ends when all its probes have, Probed gets the
	// whole round and the picker is rebuilt after it; rounds do not
	// overlap (a round's timeouts should fit in Period).
	Async bool
}

// ProbeResult is the outcome of one probe.
type ProbeResult struct {
	// Replica is the probed replica's id.
	Replica string
	Kind    ProbeKind
	// OK is false when the probe failed: refused, timed out, a 5xx, or an
	// answer that does not parse.
	OK bool
	// Took is how long the probe took (meaningful when OK).
	Took time.Duration
	// RIF and LatencyMS are a ProbeLoad's answer: requests in flight at
	// the replica and its latency estimate.
	RIF, LatencyMS float64
}

// Prober is implemented by strategies that measure the replicas actively.
// The balancer calls Probes once per strategy value, then every Period asks
// ProbeTargets which of the eligible replicas to probe, runs the probes
// and hands the results to Probed. ProbeTargets and Probed may be called
// concurrently with each other and with Picker (and, with Async, Probed
// with itself).
type Prober interface {
	Strategy
	// Probes says what to probe and how often.
	Probes() ProbeSpec
	// ProbeTargets appends to dst the indexes in replicas (the snapshot's
	// eligible replicas) of those to probe in the round starting at now,
	// and returns dst. It must not keep replicas.
	ProbeTargets(replicas []*Replica, now time.Time, dst []int) []int
	// Probed takes the results of a round started at round (with Async:
	// one replica's results). It returns a condition the operator must
	// hear of (albl: no replica up for three periods), or "". Probed must
	// not keep results.
	Probed(results []ProbeResult, round time.Time) (alert string)
}
