// Package etcdstore keeps a group's client-activated session entries in
// etcd, for cluster mode (affinity.Store; Chen et al. §III's session
// table shared by every instance; docs/affinity.md): an entry made by one
// instance routes the object's calls on every other.
//
// Keys, under the deployment store's layout (package groupstore, so that
// deleting the group deletes them in the same transaction):
//
//	<prefix>kv/affinity/<group>/<rule>/<escaped key>   the entry (JSON: replica, timeout), on a lease of its own
//
// Each entry is on a lease of the rule's timeout rounded up to whole
// seconds, at least 2 s (LeaseTTL): an entry no instance renews expires
// in etcd by itself. Renew keeps the lease alive (KeepAliveOnce) at most
// once per timeout/3 on one instance (renewDue, pure, on the injected
// clock); calls in between cost no request. An instance that Gets an
// entry another made learns its lease and renews it the same way.
//
// Every request is bounded by Options.RequestTimeout (or the caller's
// earlier deadline): a lost etcd member or quorum is an error naming
// etcd, the operation, the group, rule and key, never a hang.
//
//	st, err := etcdstore.New(etcdstore.Options{Client: es.Client(), KV: es.KV(),
//		Prefix: es.Key(groupstore.AffinityOf("objects")), Group: "objects"})
//	table.SetStore(st)
package etcdstore
