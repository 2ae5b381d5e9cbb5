package python

import (
	"encoding/json"
	"math"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// The arms, in the order the driver is given them and rows are written.
const (
	ArmPlain     = "plain"
	ArmControl   = "plain-control"
	ArmMonitored = "monitored"
	ArmDirect    = "direct"
	ArmBound     = "bound"
)

// Arms are the arms in row order.
var Arms = []string{ArmPlain, ArmControl, ArmMonitored, ArmDirect, ArmBound}

// The replica processes, as rows name them: the arms' but for the client
// pair's, which share one.
const ReplicaClient = "client"

// The targets (issue 26).
const (
	// MaxMonitorCost is the largest cost per call of the monitor: the
	// monitored replica's time per call over the plain one's, minus 1.
	MaxMonitorCost = 0.05
	// MinBoundRatio is the smallest throughput of bound calls as a
	// fraction of direct calls to the same replica.
	MinBoundRatio = 0.95
)

// Measure is one arm's segment in one round, with its replica's CPU time
// per call.
type Measure struct {
	Segment
	// ReplicaCPUUS is the replica process's CPU time per call in µs
	// during the segment; NaN when unknown.
	ReplicaCPUUS float64
}

// perCallUS is the segment's wall time per call in µs (the inverse of its
// closed-loop throughput); NaN without calls.
func (m Measure) perCallUS() float64 {
	if m.Calls <= 0 {
		return math.NaN()
	}
	return m.ElapsedS * 1e6 / float64(m.Calls)
}

// Round is one round: each arm's measure, by arm name.
type Round map[string]Measure

// Ratios are the per-round ratios the targets judge, and their medians.
type Ratios struct {
	// MonitorTime is the monitored arm's wall time per call over the
	// plain arm's: 1 + the monitor's cost per call as a client sees it.
	MonitorTime Ratio `json:"monitor_time"`
	// MonitorCPU is the monitored replica's CPU time per call over the
	// plain replica's.
	MonitorCPU Ratio `json:"monitor_cpu"`
	// BoundThroughput is the bound arm's throughput over the direct
	// arm's (plain httpx calls to the same replica).
	BoundThroughput Ratio `json:"bound_throughput"`
	// ControlTime is the A/A control: the control arm's wall time per
	// call over the plain arm's. Its distance from 1 is the noise of
	// comparing two replica processes.
	ControlTime Ratio `json:"control_time"`
	// MonitorP50 and BoundP50 are MonitorTime and BoundThroughput on the
	// segments' median latencies instead of their means: less moved by a
	// stall of the machine, reported beside them, not judged.
	MonitorP50 Ratio `json:"monitor_p50"`
	BoundP50   Ratio `json:"bound_p50"`
}

// Ratio is a ratio taken in every round, and the median over rounds
// (NaN-free rounds only; NaN when there are none).
type Ratio struct {
	Median   Num   `json:"median"`
	PerRound []Num `json:"per_round"`
}

// Num is a figure that may be unknown (NaN), written as null in JSON.
type Num float64

// MarshalJSON writes NaN and infinities as null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// Known says whether n is a finite figure.
func (n Num) Known() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// ratiosOf computes the ratios of rounds.
func ratiosOf(rounds []Round) Ratios {
	var r Ratios
	for _, rd := range rounds {
		plain, ctl, mon, direct, bound := rd[ArmPlain], rd[ArmControl], rd[ArmMonitored], rd[ArmDirect], rd[ArmBound]
		r.MonitorTime.PerRound = append(r.MonitorTime.PerRound, ratio(mon.perCallUS(), plain.perCallUS()))
		r.MonitorCPU.PerRound = append(r.MonitorCPU.PerRound, ratio(mon.ReplicaCPUUS, plain.ReplicaCPUUS))
		r.BoundThroughput.PerRound = append(r.BoundThroughput.PerRound, ratio(direct.perCallUS(), bound.perCallUS()))
		r.ControlTime.PerRound = append(r.ControlTime.PerRound, ratio(ctl.perCallUS(), plain.perCallUS()))
		r.MonitorP50.PerRound = append(r.MonitorP50.PerRound, ratio(mon.P50US, plain.P50US))
		r.BoundP50.PerRound = append(r.BoundP50.PerRound, ratio(direct.P50US, bound.P50US))
	}
	for _, x := range []*Ratio{&r.MonitorTime, &r.MonitorCPU, &r.BoundThroughput, &r.ControlTime, &r.MonitorP50, &r.BoundP50} {
		x.Median = medianFinite(x.PerRound)
	}
	return r
}

// ratio is a/b, NaN unless both are finite and positive.
func ratio(a, b float64) Num {
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return Num(math.NaN())
	}
	return Num(a / b)
}

// medianFinite is the median of the known values; NaN when there are
// none.
func medianFinite(values []Num) Num {
	var ok []float64
	for _, v := range values {
		if v.Known() {
			ok = append(ok, float64(v))
		}
	}
	if len(ok) == 0 {
		return Num(math.NaN())
	}
	return Num(stats.Median(ok))
}

// MonitorCost is the monitor's cost per call: the median per-round time
// ratio minus 1.
// NaN when unknown.
func (r Ratios) MonitorCost() float64 { return float64(r.MonitorTime.Median) - 1 }

// MonitorMet says whether the monitor's cost per call is within
// MaxMonitorCost (false when unknown).
func (r Ratios) MonitorMet() bool { return r.MonitorCost() <= MaxMonitorCost }

// BoundMet says whether bound calls reach MinBoundRatio of direct ones
// (false when unknown).
func (r Ratios) BoundMet() bool { return float64(r.BoundThroughput.Median) >= MinBoundRatio }

// Noise is the A/A control's distance from 1; NaN when unknown.
func (r Ratios) Noise() float64 { return math.Abs(float64(r.ControlTime.Median) - 1) }
