package monitor

import "github.com/fulcrum-lb/fulcrum/protocol"

// admitTerm decides whether a monitor that has seen advisories up to term
// highest (since it last registered) applies an advisory of term: not when
// term is below highest (it comes from a deposed balancer instance), else
// yes. It returns the highest term seen after it. Pure.
func admitTerm(highest, term uint64) (admit bool, next uint64) {
	if term < highest {
		return false, highest
	}
	return true, term
}

// sameAdvisory reports whether b is the advisory a: the same level,
// identified by (term, epoch). Pure.
func sameAdvisory(a, b protocol.Advisory) bool {
	return a.Advisory == b.Advisory && a.Term == b.Term && a.Epoch == b.Epoch
}
