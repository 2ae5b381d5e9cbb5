// Package groupstore persists fulcrum's groups, replicas (with the hashes
// of their tokens) and blocked addresses in a store.Store. Loads are soft
// state and never reach it.
//
// Keys, relative to the store (an etcd store puts them under its own
// prefix), JSON values:
//
//	groups/<group>            a protocol.Group, as PUT /v1/groups/{name} takes it
//	replicas/<group>/<id>     a protocol.Replica, with its token's hash
//	blocks/<group>/<hash>     a Block: an address the group refuses to
//	                          register; <hash> is of its Match form
//	health/<group>/<id>       a Health: a replica's up/down state as a
//	                          cluster's analyzer leader decided it
//	affinity/<group>/<rule>/<key>
//	                          a client-activated entry of the group's
//	                          session table (cluster mode only; on an etcd
//	                          lease; package affinity/etcdstore)
//
// Group names match [a-z0-9-]+ and replica ids are "r-" and hex digits,
// so neither holds a "/": the replicas of one group are exactly the keys
// under replicas/<group>/. This is the layout package boltstore migrates
// the files of older fulcrums to.
//
//	recs := groupstore.New(st)
//	snap, err := recs.Load()
//	err = recs.PutReplica(rep)
package groupstore
