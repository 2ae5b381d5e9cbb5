package frontdoor

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pace frees a member's max_inflight slots ahead of its calls' expected
// ends (queue.lead), so that the call the queue hands the slot to reaches
// the replica about when the one before it finishes: with a slot freed
// only when its call's answer is back, the replica idles for a round trip
// between calls, a few percent of its capacity at millisecond calls,
// which at 90% load is most of the spare. One Pace per member, shared by
// every snapshot.
//
// A call's expected end comes from its cost (the cpu part of its
// Fulcrum-Cost header) through a line fitted to the member's recent
// calls, service time = a + b·cost, its service counted from when it was
// sent or, when the call before it on the member was still running then,
// from that call's end. The calls in flight run one after another in the
// order they were sent; each one's expected end follows the one before
// it. Calls without a cost are not paced (their slots free when they
// end) and are not in the fit. Until the fit has minPaceSamples calls no
// slot is freed early; a member never has more calls with freed slots
// than max_inflight, so a stalled replica gets at most twice its limit.
type Pace struct {
	// early counts the calls in flight whose slots were freed ahead,
	// read by tryAcquire without the lock.
	early atomic.Int64

	mu      sync.Mutex
	fit     serviceFit
	calls   []*pacedCall // in flight with a cost, in the order sent
	lastEnd time.Time    // when the member's last call ended
}

// pacedCall is one call in a Pace. Its fields belong to the Pace's lock.
type pacedCall struct {
	cost     float64
	sent     time.Time
	freeAt   time.Time // when its slot is due to free
	limit    int       // max_inflight when it was sent
	released bool
	done     bool
	timer    *time.Timer
}

// Hold is a proxied call's hold on its member's slot, from Acquire to
// End.
type Hold struct {
	m *Member
	c *pacedCall
}

// Hold starts the pacing of a call of cost cost that Acquire counted on
// m under snapshot limit max_inflight: when the group's queue has a lead,
// the call has a cost and m a fit, its slot frees lead before its
// expected end. End the call with Hold.End, not Release.
func (m *Member) Hold(cost float64, limit int) Hold {
	q, p := m.Queue, m.Pace
	if q == nil || p == nil || !(cost > 0) || limit <= 0 {
		return Hold{m: m}
	}
	lead := time.Duration(q.lead.Load())
	if lead <= 0 {
		return Hold{m: m}
	}
	now := q.now()
	c := &pacedCall{cost: cost, sent: now, limit: limit}
	p.mu.Lock()
	p.calls = append(p.calls, c)
	freed := p.scheduleLocked(m, now, lead)
	p.mu.Unlock()
	m.freed(freed)
	return Hold{m: m, c: c}
}

// End uncounts the call from its member and frees its slot unless it was
// freed ahead; an answered call's service time goes into the member's
// fit.
func (h Hold) End(answered bool) {
	if h.c == nil {
		h.m.Release()
		return
	}
	m, p, q := h.m, h.m.Pace, h.m.Queue
	now := q.now()
	p.mu.Lock()
	c := h.c
	c.done = true
	if c.timer != nil {
		c.timer.Stop()
	}
	for i, o := range p.calls {
		if o == c {
			p.calls = append(p.calls[:i], p.calls[i+1:]...)
			break
		}
	}
	if answered {
		start := c.sent
		if p.lastEnd.After(start) {
			start = p.lastEnd
		}
		p.fit.add(c.cost, now.Sub(start).Seconds())
	}
	if now.After(p.lastEnd) {
		p.lastEnd = now
	}
	// Uncount the freed slot before the call: in between the member
	// looks fuller, never emptier, than it is.
	if c.released {
		p.early.Add(-1)
	}
	freed := 0
	if lead := time.Duration(q.lead.Load()); lead > 0 {
		freed = p.scheduleLocked(m, now, lead)
	}
	p.mu.Unlock()
	m.Replica.Live.Inflight.Add(-1)
	q.early.Add(uint64(freed))
	q.Kick() // the call's own slot and any freed ahead
}

// scheduleLocked sets every unreleased call's freeAt from the fit and
// frees the slots now due, returning how many it freed; the others get a
// timer. Caller holds p.mu.
func (p *Pace) scheduleLocked(m *Member, now time.Time, lead time.Duration) (freed int) {
	cursor := p.lastEnd
	for _, c := range p.calls {
		d, ok := p.fit.predict(c.cost)
		if !ok {
			return freed
		}
		start := c.sent
		if cursor.After(start) {
			start = cursor
		}
		end := start.Add(time.Duration(d * float64(time.Second)))
		cursor = end
		if c.released {
			continue
		}
		c.freeAt = end.Add(-lead)
		if wait := c.freeAt.Sub(now); wait > 0 {
			if c.timer == nil {
				c.timer = time.AfterFunc(wait, func() { p.due(m, c) })
			} else {
				c.timer.Reset(wait)
			}
			continue
		}
		if p.early.Load() >= int64(c.limit) {
			continue // at most max_inflight freed ahead
		}
		c.released = true
		p.early.Add(1)
		freed++
	}
	return freed
}

// due runs on c's timer: it frees c's slot if it is still due.
func (p *Pace) due(m *Member, c *pacedCall) {
	q := m.Queue
	p.mu.Lock()
	if c.done || c.released || q.now().Before(c.freeAt) || p.early.Load() >= int64(c.limit) {
		// Ended, freed, rescheduled later (its timer reset), or too
		// many freed: the next End reschedules it.
		p.mu.Unlock()
		return
	}
	c.released = true
	p.early.Add(1)
	p.mu.Unlock()
	m.freed(1)
}

// freed counts n slots freed ahead and hands them to waiting calls.
func (m *Member) freed(n int) {
	if n == 0 || m.Queue == nil {
		return
	}
	m.Queue.early.Add(uint64(n))
	m.Queue.Kick()
}

// Early is the number of m's calls in flight whose slots were freed ahead
// of their end (0 without a Pace).
func (m *Member) Early() int64 {
	if m.Pace == nil {
		return 0
	}
	return m.Pace.early.Load()
}

// Fit of a member's service times, an exponentially weighted least
// squares line through (cost, seconds).
const (
	// minPaceSamples is the calls a fit needs before it predicts.
	minPaceSamples = 8
	// paceDecay weighs the calls before each new one: about the last 50
	// calls count.
	paceDecay = 0.98
)

// serviceFit is the line service time = a + b·cost through a member's
// recent calls, weighted by paceDecay per later call. Pure: no clock.
type serviceFit struct {
	n               int
	w, x, y, xx, xy float64 // weighted sums of 1, cost, time, cost², cost·time
}

func (f *serviceFit) add(cost, seconds float64) {
	if !(cost > 0) || !(seconds >= 0) || seconds > 3600 {
		return
	}
	f.n++
	f.w = f.w*paceDecay + 1
	f.x = f.x*paceDecay + cost
	f.y = f.y*paceDecay + seconds
	f.xx = f.xx*paceDecay + cost*cost
	f.xy = f.xy*paceDecay + cost*seconds
}

// predict is the expected service time in seconds of a call of cost cost,
// and false before minPaceSamples calls. The line's intercept and slope
// are kept at or above 0: when the least squares line has a negative
// one (costs that say little about time), the fit falls back to time in
// proportion to cost.
func (f *serviceFit) predict(cost float64) (float64, bool) {
	if f.n < minPaceSamples || !(f.x > 0) {
		return 0, false
	}
	det := f.w*f.xx - f.x*f.x
	if det > 1e-12*f.w*f.xx {
		b := (f.w*f.xy - f.x*f.y) / det
		a := (f.y - b*f.x) / f.w
		if a >= 0 && b >= 0 {
			return a + b*cost, true
		}
	}
	return f.y / f.x * cost, true
}
