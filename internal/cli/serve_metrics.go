package cli

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// storeCollectors are the store's metrics for /metrics: the etcd store's
// (request latency, writes, reachability, watch lag); none for bbolt.
func storeCollectors(st store.Store) []prometheus.Collector {
	if s, ok := st.(*etcdstore.Store); ok && s.Metrics() != nil {
		return []prometheus.Collector{s.Metrics()}
	}
	return nil
}
