package etcdstore

// Key is the etcd key of the store's key rel (under the prefix's kv/):
// for packages that write keys of the store's layout with etcd features
// store.Store has not, such as leases (package affinity/etcdstore).
func (s *Store) Key(rel string) string { return s.kvPrefix + rel }
