package compaction

import (
	"fmt"
	"slices"
	"time"
)

// View is what one step of the compactor read: the live instances, each
// instance's published lowest needed revision, and etcd's revision then.
type View struct {
	// Live are the live instances' names (the instance directory).
	Live []string
	// Needed is every published lowest needed revision, by instance.
	Needed map[string]int64
	// Current is etcd's revision when Needed was read.
	Current int64
}

// Decision is a step's outcome: compact etcd to Rev, or not, and why.
type Decision struct {
	Compact bool
	Rev     int64
	// Reason says why nothing is compacted ("" when Compact).
	Reason string
}

// mark is the lowest needed revision as captured at a time.
type mark struct {
	at  time.Time
	rev int64
}

// Core decides when and where to compact, from the views it is given at
// the times given: at most once a period, to the lowest needed revision
// it captured a period before (the margin that spares watches that are
// just starting, and the revisions of the last period), never above the
// lowest needed revision of now, and never while a live instance has not
// published one. It reads no clock and does no I/O. Not safe for
// concurrent use.
type Core struct {
	period    time.Duration
	sample    mark // zero: none captured yet
	compacted int64
}

// NewCore returns a core that compacts at most every period (≤ 0: never).
func NewCore(period time.Duration) *Core { return &Core{period: period} }

// Compacted records that etcd's history is compacted up to rev (a
// compaction done, or found done by another).
func (c *Core) Compacted(rev int64) { c.compacted = max(c.compacted, rev) }

// Revision is the highest revision etcd is known compacted to (0: none).
func (c *Core) Revision() int64 { return c.compacted }

// Reset forgets the captured revision (the instance stopped compacting:
// what it captured may be stale when it starts again).
func (c *Core) Reset() { c.sample = mark{} }

// Step decides at now from v. A decision to compact is to be followed by
// Compacted once etcd has done it.
func (c *Core) Step(now time.Time, v View) Decision {
	if c.period <= 0 {
		return Decision{Reason: "compaction is disabled"}
	}
	if !c.sample.at.IsZero() && now.Sub(c.sample.at) < c.period {
		return Decision{Reason: fmt.Sprintf("last capture %v ago, under the period %v", now.Sub(c.sample.at), c.period)}
	}
	for _, name := range slices.Sorted(slices.Values(v.Live)) {
		if _, ok := v.Needed[name]; !ok {
			return Decision{Reason: fmt.Sprintf("instance %q has not published its lowest needed revision", name)}
		}
	}
	low := v.Current
	for _, rev := range v.Needed {
		low = min(low, rev)
	}
	prev := c.sample
	c.sample = mark{at: now, rev: low}
	if prev.at.IsZero() {
		return Decision{Reason: fmt.Sprintf("captured revision %d; compacting to it a period from now", low)}
	}
	target := min(prev.rev, low)
	if target <= c.compacted {
		return Decision{Reason: fmt.Sprintf("revision %d (captured a period ago, and needed now) is compacted already (%d)", target, c.compacted)}
	}
	return Decision{Compact: true, Rev: target}
}
