package cli

import (
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/compaction"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// serveCompact is an instance's part in compacting etcd's history
// (package compaction), with store.etcd: it publishes the lowest revision
// its watches need — the store's watch, and each replicated group's log
// watch added through watchLog — on its directory entry's lease; with
// store.etcd.compact_every > 0 it campaigns in the compaction election,
// and compacts while it leads. A nil *serveCompact (a single node) does
// nothing.
type serveCompact struct {
	needs   *compaction.Needs
	pub     *compaction.Publisher
	run     *compaction.Runner // nil with compact_every 0
	metrics *compaction.Metrics
}

// startCompaction starts publishing (and compacting) when the instance
// is in a cluster (cr has a directory and sl an election), and returns
// nil otherwise. publishEvery paces the publisher (0: its default).
func startCompaction(cfg config.File, st store.Store, cr *clusterRun, sl *serveLeader, publishEvery time.Duration, log *slog.Logger) (*serveCompact, error) {
	es, ok := st.(*etcdstore.Store)
	if !ok || cr == nil || cr.dir == nil || sl == nil {
		return nil, nil
	}
	sc := &serveCompact{needs: &compaction.Needs{}, metrics: compaction.NewMetrics()}
	sc.needs.Add(es.LowestNeeded)
	pub, err := compaction.StartPublisher(compaction.PublisherOptions{
		Client: cr.cli, Prefix: es.Prefix(), Instance: cr.dir.Name(), Lease: cr.dir.Lease,
		Needs: sc.needs, Every: publishEvery, Metrics: sc.metrics, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("serve: etcd compaction: %w", err)
	}
	sc.pub = pub
	every := cfg.Store.Etcd.WithDefaults().CompactEvery.D()
	if every <= 0 {
		return sc, nil
	}
	run, err := compaction.StartRunner(compaction.RunnerOptions{
		Client: cr.cli, Prefix: es.Prefix(), Every: every,
		Live: func() []string {
			var names []string
			for _, in := range cr.dir.Instances() {
				names = append(names, in.Name)
			}
			return names
		},
		Join: func() error { return sl.el.Join(compaction.Election, every) },
		Leading: func() bool {
			s, ok := sl.el.Status(compaction.Election)
			return ok && s.State == leader.Leader
		},
		Metrics: sc.metrics, Logger: log,
	})
	if err != nil {
		pub.Close()
		return nil, fmt.Errorf("serve: etcd compaction: %w", err)
	}
	sc.run = run
	return sc, nil
}

// watchLog adds a replicated group's log watches (etcdlog.Log.
// LowestNeeded) to what the instance publishes; the returned func removes
// them (call it when the log closes). On a single node it does nothing.
func (sc *serveCompact) watchLog(lowest func() (uint64, bool)) (remove func()) {
	if sc == nil {
		return func() {}
	}
	return sc.needs.AddPosition(lowest)
}

// collectors are the compaction's figures for /metrics.
func (sc *serveCompact) collectors() []prometheus.Collector {
	if sc == nil {
		return nil
	}
	return []prometheus.Collector{sc.metrics}
}

// close stops compacting and publishing; before the election and the
// directory close (the published key goes with the directory's lease).
// Closing twice does nothing.
func (sc *serveCompact) close() {
	if sc == nil {
		return
	}
	if sc.run != nil {
		sc.run.Close()
		sc.run = nil
	}
	if sc.pub != nil {
		sc.pub.Close()
		sc.pub = nil
	}
}

// withoutCompaction is leaders without the compaction election, which is
// no group's.
func withoutCompaction(leaders func() map[string]string) func() map[string]string {
	if leaders == nil {
		return nil
	}
	return func() map[string]string {
		out := maps.Clone(leaders())
		delete(out, compaction.Election)
		return out
	}
}
