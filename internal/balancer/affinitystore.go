package balancer

import (
	"github.com/fulcrum-lb/fulcrum/internal/affinity"
	affetcd "github.com/fulcrum-lb/fulcrum/internal/affinity/etcdstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// Cluster mode keeps the client-activated entries of the groups' session
// tables in etcd as well (package affinity/etcdstore; docs/affinity.md):
// an object created through one instance is found through the others.

// withAffinityStore gives t, a group's session table, the group's
// cluster-wide store when it has none and this instance runs in a
// cluster on etcd; it returns t.
func (b *Balancer) withAffinityStore(t *affinity.Table, group string) *affinity.Table {
	if t == nil || t.Store() != nil || b.opts.Leadership == nil {
		return t
	}
	es, ok := b.opts.Store.(*etcdstore.Store)
	if !ok {
		return t
	}
	s, err := affetcd.New(affetcd.Options{Client: es.Client(), KV: es.KV(), Root: es.Key(""), Group: group, Clock: b.clock})
	if err != nil {
		b.log.Error("session table: client-activated entries stay on this instance", "group", group, "err", err)
		return t
	}
	t.SetStore(s)
	return t
}
