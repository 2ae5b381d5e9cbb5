package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/cluster"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// clusterRun is serve's side of the instance directory: with store.etcd,
// the instance's entry (its front doors kept current from the balancer's
// OnFrontDoors) and the other instances, which the balancer reads through
// peers; on a single node, the one instance GET /v1/cluster describes.
type clusterRun struct {
	self cluster.Entry
	// dir, cli and etcd are nil (zero) on a single node.
	dir  *cluster.Directory
	cli  *clientv3.Client
	etcd config.EtcdStore

	b    *balancer.Balancer
	kick chan struct{} // the front doors changed; capacity 1
	stop context.CancelFunc
	done chan struct{}
}

// openCluster registers the instance in the directory when st is on etcd:
// a name held by a live instance makes it wait for that instance's lease
// to expire, then fail (exit 1, naming the holder). On a single node it
// only describes the instance.
func openCluster(ctx context.Context, cfg config.File, st store.Store, in config.Instance, version string, log *slog.Logger) (*clusterRun, error) {
	cr := &clusterRun{
		self: cluster.Entry{Name: in.Name, AdminURL: in.AdminURL, Started: time.Now().UTC().Truncate(time.Millisecond), Version: version},
		kick: make(chan struct{}, 1),
	}
	es, ok := st.(*etcdstore.Store)
	if !ok || !cfg.Store.Etcd.Enabled() {
		return cr, nil
	}
	cr.etcd = cfg.Store.Etcd.WithDefaults()
	cr.cli = es.Client()
	dir, err := cluster.Open(ctx, cluster.Options{Client: cr.cli, Prefix: es.Prefix(), Self: cr.self, SessionTTL: cr.etcd.SessionTTL.D(), Logger: log})
	var nt *cluster.NameTakenError
	switch {
	case errors.As(err, &nt):
		return nil, exitCode(1, err)
	case err != nil:
		return nil, err
	}
	cr.dir = dir
	return cr, nil
}

// closeCluster closes cr on serve's early returns (bounded by 5 s); a
// normal shutdown has closed it already.
func closeCluster(cr *clusterRun, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cr.close(ctx); err != nil {
		log.Warn("instance directory: cannot revoke the entry's lease; it expires with its TTL", "err", err)
	}
}

// frontDoorsChanged is the balancer's Options.OnFrontDoors: it never
// blocks.
func (cr *clusterRun) frontDoorsChanged() {
	select {
	case cr.kick <- struct{}{}:
	default:
	}
}

// follow keeps the entry's front doors current from b until close.
func (cr *clusterRun) follow(b *balancer.Balancer) {
	cr.b = b
	if cr.dir == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cr.stop, cr.done = cancel, make(chan struct{})
	go func() {
		defer close(cr.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-cr.kick:
				cr.dir.SetFrontDoors(b.FrontDoors())
			}
		}
	}()
}

// peers are the other live instances, for the balancer's Options.Peers:
// their admin API's host:port and their bound front doors, a wildcard
// host replaced by their admin URL's (cluster.Reachable).
func (cr *clusterRun) peers() []balancer.Peer {
	if cr.dir == nil {
		return nil
	}
	others := cr.dir.Others()
	out := make([]balancer.Peer, 0, len(others))
	for _, e := range others {
		p := balancer.Peer{Name: e.Name, AdminAddr: urlHostPort(e.AdminURL), FrontDoors: map[string]string{}}
		for g, fd := range e.FrontDoors {
			if a := cluster.Reachable(fd.Address, e.AdminURL); a != "" {
				p.FrontDoors[g] = a
			}
		}
		out = append(out, p)
	}
	return out
}

// urlHostPort is the host:port an http(s) URL connects to; "" when it
// cannot be read.
func urlHostPort(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Hostname() == "" {
		return ""
	}
	port := pu.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
	}
	if port == "" {
		return ""
	}
	return net.JoinHostPort(pu.Hostname(), port)
}

// describe is GET /v1/cluster's answer (its leaders are the API's).
func (cr *clusterRun) describe(ctx context.Context) protocol.Cluster {
	if cr.dir == nil {
		self := cr.self
		if cr.b != nil {
			self.FrontDoors = cr.b.FrontDoors()
		}
		return protocol.Cluster{Mode: protocol.ClusterModeSingle, Instance: self.Name, Instances: []protocol.ClusterInstance{self.Instance(true)}}
	}
	return protocol.Cluster{
		Mode:      protocol.ClusterModeCluster,
		Instance:  cr.dir.Name(),
		Instances: cr.dir.Instances(),
		Etcd:      &protocol.ClusterEtcd{Prefix: cr.etcd.Prefix, Endpoints: cluster.Health(ctx, cr.cli, cr.etcd.Endpoints, cluster.HealthTimeout)},
	}
}

// close stops following the front doors and revokes the entry's lease,
// so that the entry goes at once (bounded by ctx). Safe to call twice.
func (cr *clusterRun) close(ctx context.Context) error {
	if cr == nil || cr.dir == nil {
		return nil
	}
	if cr.stop != nil {
		cr.stop()
		<-cr.done
		cr.stop = nil
	}
	return cr.dir.Close(ctx)
}
