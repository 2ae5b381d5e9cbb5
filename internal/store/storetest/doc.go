// Package storetest is the conformance suite of store.Store: every
// implementation (boltstore, and etcdstore for cluster mode) runs the same
// tests, so that code written against the interface behaves the same on
// each.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{
//			Open:    func(t *testing.T) store.Store { ... a fresh, empty store ... },
//			Compact: func(t *testing.T, s store.Store, rev int64) { ... },
//			// etcd: the revision is the cluster's, shared with other writers.
//			SparseRevisions: true,
//		})
//	}
package storetest
