package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/cluster"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/moves"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// leaderCloseTimeout bounds the resignations and the lease's revocation
// at shutdown.
const leaderCloseTimeout = 5 * time.Second

// serveLeader is an instance's analyzer election, with store.etcd: one
// leader.Elector on the store's etcd client, under its prefix, named by
// instance.name, with store.etcd.session_ttl, and the planned moves in
// etcd (moves.Store) the leaders commit and the front doors look up. Its changes start and stop
// the leader's work in the balancer (Balancer.LeadershipChanged); its
// metrics are served on /metrics. A nil *serveLeader (a single node)
// does nothing.
type serveLeader struct {
	el      *leader.Elector
	moves   *moves.Store
	metrics *leader.Metrics
	b       atomic.Pointer[balancer.Balancer]
	// token is the admin token the load pushes to the other instances
	// carry (every instance of a cluster has the same); a reload
	// replaces it.
	token atomic.Pointer[string]
}

// startLeader starts the instance's election when cfg has store.etcd (st
// is then the etcd store), and returns nil otherwise.
func startLeader(cfg config.File, st store.Store, instance string, log *slog.Logger) (*serveLeader, error) {
	if !cfg.Store.Etcd.Enabled() {
		return nil, nil
	}
	es, ok := st.(*etcdstore.Store)
	if !ok {
		return nil, fmt.Errorf("serve: store.etcd is set but the store is %T", st)
	}
	e := cfg.Store.Etcd.WithDefaults()
	sl := &serveLeader{metrics: leader.NewMetrics()}
	sl.token.Store(&cfg.AdminToken)
	el, err := leader.New(leader.Options{
		Client:     es.Client(),
		Prefix:     es.Prefix(),
		Instance:   instance,
		SessionTTL: e.SessionTTL.D(),
		Metrics:    sl.metrics,
		Logger:     log,
		OnChange:   sl.changed,
	})
	if err != nil {
		return nil, fmt.Errorf("serve: analyzer election: %w", err)
	}
	sl.el = el
	if sl.moves, err = moves.New(moves.Options{Client: es.Client(), Prefix: es.Prefix()}); err != nil {
		_ = el.Close(context.Background())
		return nil, fmt.Errorf("serve: planned moves: %w", err)
	}
	return sl, nil
}

// changed passes a change of leadership to the balancer. A change before
// the balancer exists is caught up by its next step.
func (sl *serveLeader) changed(ch leader.Change) {
	if b := sl.b.Load(); b != nil {
		b.LeadershipChanged(ch.Group)
	}
}

// wire sets the balancer's leadership options. The other instances'
// admin URLs (for the 307 that sends a report to the group's leader, and
// for the load pushes) come from the instance directory dir (nil: none
// known; reports at an instance that does not lead their group are then
// answered 503 no_leader, and no load view is pushed).
func (sl *serveLeader) wire(o *balancer.Options, dir *cluster.Directory) {
	if sl == nil {
		return
	}
	o.Leadership = sl.el
	o.Moves = sl.moves
	o.PeerToken = func() string { return *sl.token.Load() }
	if dir != nil {
		o.PeerURL = dir.AdminURL
		o.PeerAdminURLs = func() []string {
			others := dir.Others()
			urls := make([]string, 0, len(others))
			for _, e := range others {
				if e.AdminURL != "" {
					urls = append(urls, e.AdminURL)
				}
			}
			return urls
		}
	}
}

// leaders is GET /v1/cluster's leader of each group (nil on a single
// node).
func (sl *serveLeader) leaders() func() map[string]string {
	if sl == nil {
		return nil
	}
	return sl.el.Leaders
}

// attach gives the election the balancer it drives.
func (sl *serveLeader) attach(b *balancer.Balancer) {
	if sl != nil {
		sl.b.Store(b)
	}
}

// setToken replaces the admin token of the load pushes (a reload).
func (sl *serveLeader) setToken(token string) {
	if sl != nil {
		sl.token.Store(&token)
	}
}

// collectors are the election's figures for /metrics.
func (sl *serveLeader) collectors() []prometheus.Collector {
	if sl == nil {
		return nil
	}
	return []prometheus.Collector{sl.metrics}
}

// close resigns every group the instance leads and revokes its session's
// lease, so that another instance takes over at once; before the store
// closes. Closing twice does nothing.
func (sl *serveLeader) close(log *slog.Logger) {
	if sl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaderCloseTimeout)
	defer cancel()
	if err := sl.el.Close(ctx); err != nil {
		log.Warn("analyzer election: resigning at shutdown failed; the lease ends the terms", "err", err)
	}
}
