// Package replogtest is the conformance suite every replog engine runs:
// order, deduplication under concurrency, watches (from the middle, below
// the trim point, ended by their context), limits, session expiry,
// reopening, and undecodable entries.
//
//	func TestConformance(t *testing.T) {
//		replogtest.Run(t, replogtest.Harness{Open: ..., Reopen: ..., Expire: ..., Garbage: ...})
//	}
package replogtest
