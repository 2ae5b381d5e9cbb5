// Package etcdstore is the store of cluster mode: store.Store on an etcd
// cluster (v3 API), under a key prefix of its own, so that several fulcrum
// instances share one state and several deployments may share one etcd.
//
// Keys, under the prefix P (DefaultPrefix, "/fulcrum/"):
//
//   - P + "meta/schema": the schema version (SchemaVersion), written by the
//     first Open on an empty prefix. Open refuses a prefix of a newer
//     schema, or one holding keys without a schema version.
//   - P + "kv/" + key: every key of the store, the value as the caller
//     wrote it. Revisions are etcd's own (ModRevision, CreateRevision).
//
// etcd's revision counts every change of the cluster, under any prefix:
// the store's revisions increase, but not one by one (the storetest
// contract with sparse revisions). Compaction is etcd's, for the whole
// cluster: LowestNeeded says what the store's watches still read from
// etcd's history (package compaction publishes it).
//
//	st, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: []string{"http://127.0.0.1:2379"}})
//	if err != nil { ... } // names etcd and the endpoints
//	defer st.Close()
package etcdstore
