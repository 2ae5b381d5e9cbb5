package frontdoor

import (
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestServiceFit(t *testing.T) {
	var f serviceFit
	for i := range minPaceSamples - 1 {
		f.add(float64(1+i), 0.001+0.0005*float64(1+i))
	}
	if _, ok := f.predict(3); ok {
		t.Fatalf("predicts after %d calls, want %d first", f.n, minPaceSamples)
	}
	f.add(20, 0.001+0.0005*20)
	got, ok := f.predict(10)
	if want := 0.001 + 0.0005*10; !ok || math.Abs(got-want) > 1e-9 {
		t.Fatalf("predict(10) = %v, %v on the line 1 ms + 0.5 ms per unit, want %v", got, ok, want)
	}

	// Times that fall as costs rise say nothing the line can use: time
	// in proportion to cost instead.
	var g serviceFit
	for i := range minPaceSamples {
		g.add(float64(1+i), 0.01-0.001*float64(i))
	}
	got, _ = g.predict(2)
	if want := g.y / g.x * 2; math.Abs(got-want) > 1e-12 || got <= 0 {
		t.Fatalf("predict(2) = %v on a falling line, want the proportional %v", got, want)
	}

	// Equal costs: the mean time.
	var e serviceFit
	for i := range minPaceSamples {
		e.add(5, 0.002+0.0001*float64(i%2))
	}
	got, _ = e.predict(5)
	if math.Abs(got-0.00205) > 2e-5 {
		t.Fatalf("predict(5) = %v from equal costs, want their mean time about 2.05 ms", got)
	}

	// Nonsense is ignored.
	n := e.n
	e.add(0, 1)
	e.add(1, -1)
	e.add(math.NaN(), 1)
	e.add(1, math.Inf(1))
	if e.n != n {
		t.Fatalf("fit took %d nonsense samples", e.n-n)
	}
}

// paced is a one-member snapshot with max_inflight 1 and a queue with
// lead, whose member has a fit of 1 ms + 1 ms per unit of cost on the
// manual clock.
func paced(t *testing.T, lead time.Duration) (*Snapshot, *clocktest.Manual) {
	t.Helper()
	cfg := long(protocol.QueueCost)
	cfg.Lead = protocol.Duration(lead)
	s, clock := queued(t, 1, 1, cfg)
	m := s.Eligible[0]
	m.Pace = new(Pace)
	for i := range minPaceSamples {
		cost := float64(1 + i)
		got, err := s.Acquire(&strategy.Request{Cost: cost}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		h := got.Hold(cost, s.MaxInflight)
		clock.Advance(time.Duration(1+cost) * time.Millisecond)
		h.End(true)
	}
	if d, ok := m.Pace.fit.predict(4); !ok || math.Abs(d-0.005) > 1e-6 {
		t.Fatalf("fit after %d calls: %v, %v for cost 4, want 5 ms", minPaceSamples, d, ok)
	}
	return s, clock
}

// A call expected to end within the lead frees its slot at once: the
// next call gets the member while it runs. Only max_inflight calls are
// freed ahead, and the freed slot is uncounted once, when the call ends.
func TestPaceFreesASlotDueNow(t *testing.T) {
	s, _ := paced(t, 10*time.Millisecond)
	m := s.Eligible[0]
	first, err := s.Acquire(&strategy.Request{Cost: 2}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	h1 := first.Hold(2, s.MaxInflight) // expected 3 ms: due now
	if m.Early() != 1 || s.Queue.Stats().Early != 1 {
		t.Fatalf("after a call expected in 3 ms with a lead of 10 ms: early %d (queue %d), want 1", m.Early(), s.Queue.Stats().Early)
	}
	second, err := s.Acquire(&strategy.Request{Cost: 2}, nil, 0)
	if err != nil {
		t.Fatalf("second call while the first's slot is freed: %v", err)
	}
	h2 := second.Hold(2, s.MaxInflight)
	if m.Early() != 1 {
		t.Fatalf("early %d with max_inflight 1, want at most 1", m.Early())
	}
	if _, err := s.Acquire(&strategy.Request{Cost: 2}, nil, 0); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("third call: %v, want ErrOverloaded (one slot, one freed ahead)", err)
	}
	h1.End(true)
	// The second is now the one running: due now too.
	if got := m.Replica.Live.Inflight.Load(); got != 1 || m.Early() != 1 {
		t.Fatalf("after the first ended: inflight %d, early %d; want 1, 1", got, m.Early())
	}
	h2.End(true)
	if got := m.Replica.Live.Inflight.Load(); got != 0 || m.Early() != 0 {
		t.Fatalf("after both ended: inflight %d, early %d; want 0, 0", got, m.Early())
	}
}

// Without a cost, or before the fit, or without a lead, a slot frees only
// when its call ends.
func TestPaceHoldsWithoutWhatItNeeds(t *testing.T) {
	s, _ := paced(t, 10*time.Millisecond)
	m := s.Eligible[0]
	got, err := s.Acquire(&strategy.Request{}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := got.Hold(0, s.MaxInflight)
	if m.Early() != 0 {
		t.Fatal("a call without a cost freed its slot ahead")
	}
	h.End(false)

	fresh, _ := queued(t, 1, 1, protocol.Queue{Limit: 10, Timeout: protocol.Duration(time.Hour), Lead: protocol.Duration(time.Second)})
	fresh.Eligible[0].Pace = new(Pace)
	got, _ = fresh.Acquire(&strategy.Request{Cost: 1}, nil, 0)
	h = got.Hold(1, fresh.MaxInflight)
	if fresh.Eligible[0].Early() != 0 {
		t.Fatal("a member without a fit freed a slot ahead")
	}
	h.End(true)

	off, _ := paced(t, 10*time.Millisecond)
	off.Queue.Configure(long(protocol.QueueCost)) // lead 0
	got, _ = off.Acquire(&strategy.Request{Cost: 1}, nil, 0)
	h = got.Hold(1, off.MaxInflight)
	if off.Eligible[0].Early() != 0 {
		t.Fatal("a queue without a lead freed a slot ahead")
	}
	h.End(true)
	if n := off.Eligible[0].Replica.Live.Inflight.Load(); n != 0 {
		t.Fatalf("inflight %d after the call ended, want 0", n)
	}
}

// A call expected to end later than the lead frees its slot on a timer:
// a call waiting in the queue gets the member while the first still runs.
func TestPaceFreesASlotOnTime(t *testing.T) { synctest.Test(t, paceFreesASlotOnTime) }

func paceFreesASlotOnTime(t *testing.T) {
	s, clock := paced(t, 10*time.Millisecond)
	m := s.Eligible[0]
	first, err := s.Acquire(&strategy.Request{Cost: 40}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Expected in 41 ms: due 31 ms from now on the manual clock. The
	// timer runs on the bubble's clock, and frees the slot only once the
	// manual clock says it is due.
	h := first.Hold(40, s.MaxInflight)
	out := make(chan result, 1)
	waitFor(t, s, "waiting", &strategy.Request{Cost: 1}, nil, nil, out)
	clock.Advance(20 * time.Millisecond)
	// Not due yet: the timer's work, run now, leaves the slot held.
	m.Pace.due(m, h.c)
	if m.Early() != 0 || s.Queue.Stats().Waiting != 1 {
		t.Fatalf("20 ms in: early %d, waiting %d; want the slot held (due at 31 ms)", m.Early(), s.Queue.Stats().Waiting)
	}
	// Due: the timer, fired now on the bubble's clock, frees the slot.
	clock.Advance(11 * time.Millisecond)
	due := time.Now()
	h.c.timer.Reset(0)
	select {
	case r := <-out:
		if r.err != nil || r.m != m {
			t.Fatalf("waiting call got %v, %v; want the member", r.m, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the waiting call got no member %v after the slot was due", time.Since(due))
	}
	if m.Early() != 1 || m.Replica.Live.Inflight.Load() != 2 {
		t.Fatalf("early %d, inflight %d; want 1, 2", m.Early(), m.Replica.Live.Inflight.Load())
	}
	h.End(true)
	r := Hold{m: m}
	r.End(true)
	if m.Early() != 0 || m.Replica.Live.Inflight.Load() != 0 {
		t.Fatalf("after both ended: early %d, inflight %d; want 0, 0", m.Early(), m.Replica.Live.Inflight.Load())
	}
}
