// Package boltstore is the embedded store.Store: one bbolt file in the data
// directory, for a balancer that runs alone.
//
// It honours the whole contract of package store: a global revision
// counter, persisted with the data, advanced once per transaction that
// changes something; each key's ModRev and CreateRev in front of its value;
// transactions limited as etcd limits them. bbolt keeps only each key's
// latest state, so the history Watch serves is in memory: the last
// DefaultHistory revisions committed since Open. Revisions committed before
// Open are compacted, as after an etcd compaction: a watcher that needs
// them reads the current state with List and watches from its revision on.
//
// The file records its schema version; Open migrates the layout of older
// versions (schema.go) and refuses a newer one.
//
//	st, err := boltstore.Open(dataDir)
//	if err != nil { ... } // errors.Is(err, boltstore.ErrInUse): another fulcrum has it
//	defer st.Close()
//	kvs, rev, err := st.List(ctx, "groups/")
//	ch, err := st.Watch(ctx, "groups/", rev+1)
package boltstore
