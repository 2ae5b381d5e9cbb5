// Package cluster is the instance directory of a cluster of fulcrum
// instances on etcd: each instance registers an entry under
// <prefix>instances/<name> on an etcd lease of its own (kept alive, the
// entry written again after a lost lease), and watches every entry, so
// that it knows the live instances: their admin URLs, the addresses their
// front doors are bound to (or why not), when they started and their
// version. A killed instance's entry goes when its lease expires; one that
// shuts down revokes its lease, and its entry goes at once.
//
// A name is held by one live instance at a time: Open finds the key of a
// name held by another lease, waits for it to go for that lease's TTL
// (and etcd's expiry granularity), and then fails with a *NameTakenError
// naming the holder and its admin URL.
//
// The pure parts — decoding entries (DecodeEntry), deciding about a held
// name (decideClaim), the reachable form of a bound address (Reachable) —
// take no I/O; Directory is the thin layer that talks to etcd.
//
//	d, err := cluster.Open(ctx, cluster.Options{Client: cli, Prefix: "/fulcrum/", Self: cluster.Entry{Name: "a", AdminURL: "http://10.0.0.1:7070"}})
//	...
//	d.SetFrontDoors(map[string]protocol.FrontDoorBinding{"prime": {Address: "0.0.0.0:8000"}})
//	for _, in := range d.Instances() { ... }
//	defer d.Close(ctx)
package cluster
