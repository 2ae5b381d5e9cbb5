package monitor_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestStaleTermAdvisoriesAreIgnored: an advisory whose term is below the
// highest seen is ignored whole (level, clients and report interval); the
// same epoch in a newer term is a new advisory, so its clients are sent
// back once again; a registration forgets the highest term.
func TestStaleTermAdvisoriesAreIgnored(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, nil)
	rp.start(t)
	rp.calls(t, "a", true, 1)

	admin.setAdvisory(protocol.Advisory{Advisory: protocol.High, Term: 5, Epoch: 1, Clients: []string{"a"}})
	rp.reportNow(t, time.Second)
	if code, _ := rp.call(t, "a", true, "/prime/7"); code != http.StatusTemporaryRedirect {
		t.Fatalf("a under high in term 5: status %d, want 307", code)
	}
	rp.calls(t, "a", true, 1) // sent back once per advisory

	// A deposed instance's drain (term 4) changes nothing, not even the
	// report interval.
	before := rp.mon.Interval()
	admin.setAdvisory(protocol.Advisory{Advisory: protocol.Drain, Term: 4, Epoch: 9, ReportInterval: protocol.Duration(7 * time.Second)})
	rp.reportNow(t, time.Second)
	if got := rp.mon.Advisory(); got.Advisory != protocol.High || got.Term != 5 || got.Epoch != 1 {
		t.Fatalf("after a term-4 drain the monitor obeys %+v, want term 5 epoch 1 high", got)
	}
	if got := rp.mon.Interval(); got != before {
		t.Fatalf("a stale advisory changed the interval to %v (was %v)", got, before)
	}
	rp.calls(t, "b", true, 1) // drain would send b back

	// The same epoch in a newer term is another advisory.
	admin.setAdvisory(protocol.Advisory{Advisory: protocol.High, Term: 6, Epoch: 1, Clients: []string{"a"}})
	rp.reportNow(t, time.Second)
	if code, _ := rp.call(t, "a", true, "/prime/7"); code != http.StatusTemporaryRedirect {
		t.Fatalf("a under high in term 6 epoch 1: status %d, want 307", code)
	}
	rp.calls(t, "a", true, 1)

	// A registration forgets the highest term: after the token is
	// rejected and the monitor registers again, term 2 is obeyed.
	admin.revokeTokens()
	admin.setAdvisory(protocol.Advisory{Advisory: protocol.Drain, Term: 2, Epoch: 1})
	rp.reportNow(t, time.Second)
	if regs, _, _ := admin.snapshot(); len(regs) != 2 {
		t.Fatalf("%d registrations, want 2", len(regs))
	}
	if got := rp.mon.Advisory(); got.Advisory != protocol.Drain || got.Term != 2 {
		t.Fatalf("after registering again the monitor obeys %+v, want the term-2 drain", got)
	}
	if code, _ := rp.call(t, "b", true, "/prime/7"); code != http.StatusTemporaryRedirect {
		t.Fatalf("b under drain: status %d, want 307", code)
	}
}

// TestPullIgnoresStaleTerms: the pull handler applies the same rule to
// the advisory the balancer passes in Fulcrum-Advisory.
func TestPullIgnoresStaleTerms(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, func(o *monitor.Options) { o.Mode = protocol.MonitorPull })
	rp.start(t)
	rp.clock.Advance(time.Second)
	pull(t, rp, protocol.Advisory{Advisory: protocol.Nominal, Term: 8, Epoch: 1})
	rp.clock.Advance(time.Second)
	pull(t, rp, protocol.Advisory{Advisory: protocol.Drain, Term: 7, Epoch: 2})
	if got := rp.mon.Advisory().Advisory; got != protocol.Nominal {
		t.Fatalf("after a term-7 drain pulled behind term 8: advisory %q, want nominal", got)
	}
	rp.calls(t, "a", true, 1)
	rp.clock.Advance(time.Second)
	pull(t, rp, protocol.Advisory{Advisory: protocol.Drain, Term: 8, Epoch: 2})
	if code, _ := rp.call(t, "a", true, "/"); code != http.StatusTemporaryRedirect {
		t.Fatalf("a under a term-8 drain: status %d, want 307", code)
	}
}
