package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// The embedded etcd member (store.etcd.embedded, --etcd-embedded): an
// etcd server run inside fulcrum serve, so that three fulcrum processes
// form their etcd cluster with nothing else installed. This file is the
// only one that links etcd's server; no library package does.

// Names of the flags and keys, for the errors.
const (
	peersFlag = "--etcd-peers"
	peersKey  = "store.etcd.embedded.peers"
)

// embeddedFlags are serve's flags of the embedded member.
type embeddedFlags struct {
	cmd    *cobra.Command
	on     bool
	peers  string
	data   string
	client string
	join   bool
	// parsed are the items of --etcd-peers, once parse has run.
	parsed []string
}

// addEmbeddedFlags adds the embedded member's flags to serve.
func addEmbeddedFlags(cmd *cobra.Command) *embeddedFlags {
	f := &embeddedFlags{cmd: cmd}
	fs := cmd.Flags()
	fs.BoolVar(&f.on, "etcd-embedded", false, "run an etcd member inside fulcrum and keep the state on it (store.etcd.embedded; docs/cluster.md)")
	fs.StringVar(&f.peers, "etcd-peers", "", "with --etcd-embedded: every member as name=http://host:port (peer URL), separated by commas, this instance's name (instance.name) among them")
	fs.StringVar(&f.data, "etcd-data", "", "with --etcd-embedded: the member's data directory (default <data_dir>/etcd)")
	fs.StringVar(&f.client, "etcd-client", "", "with --etcd-embedded: the member's client URL, listened on and used by this fulcrum (default "+config.DefaultEtcdClientURL+")")
	fs.BoolVar(&f.join, "etcd-join", false, "with --etcd-embedded: join a running cluster the member was added to (etcdctl member add) instead of forming a new one")
	return f
}

// parse checks the flags by themselves: the others need --etcd-embedded,
// and each --etcd-peers item and the client URL are checked.
func (f *embeddedFlags) parse() error {
	fs := f.cmd.Flags()
	if !f.on {
		for _, name := range []string{"etcd-peers", "etcd-data", "etcd-client", "etcd-join"} {
			if fs.Changed(name) {
				return fmt.Errorf("serve: --%s: only with --etcd-embedded (which runs the etcd member it configures)", name)
			}
		}
		return nil
	}
	if fs.Changed("etcd-peers") {
		f.parsed = nil
		for item := range strings.SplitSeq(f.peers, ",") {
			if item = strings.TrimSpace(item); item != "" {
				f.parsed = append(f.parsed, item)
			}
		}
		if _, errs := config.CheckEtcdPeers(peersFlag, false, f.parsed, ""); len(errs) > 0 {
			return fmt.Errorf("serve: %w", errs[0])
		}
	}
	if fs.Changed("etcd-data") && strings.TrimSpace(f.data) == "" {
		return fmt.Errorf("serve: --etcd-data: invalid value %q, must be a directory path", f.data)
	}
	if fs.Changed("etcd-client") {
		if msg := config.CheckEtcdListenURL(f.client); msg != "" {
			return fmt.Errorf("serve: --etcd-client: invalid value %q, %s", f.client, msg)
		}
	}
	return nil
}

// apply sets the flags given into c's store.etcd.embedded.
func (f *embeddedFlags) apply(c *config.File) {
	fs := f.cmd.Flags()
	e := &c.Store.Etcd.Embedded
	if fs.Changed("etcd-embedded") && !f.on {
		*e = config.EtcdEmbedded{}
		return
	}
	if fs.Changed("etcd-peers") {
		e.Peers = f.parsed
	}
	if fs.Changed("etcd-data") {
		e.DataDir = f.data
	}
	if fs.Changed("etcd-client") {
		e.ClientURL = f.client
	}
	if fs.Changed("etcd-join") {
		e.Join = f.join
	}
}

// peersField names where the peers came from, for the errors. f may be
// nil (no flags).
func (f *embeddedFlags) peersField() string {
	if f != nil && f.cmd.Flags().Changed("etcd-peers") {
		return peersFlag
	}
	return peersKey
}

// forced reports whether --etcd-embedded was given (true): the member
// runs even when store.etcd.embedded sets nothing. f may be nil.
func (f *embeddedFlags) forced() bool { return f != nil && f.on }

// memberConfig is the embedded member's configuration for cfg (flags
// applied), named self. peersField names where the peers came from.
func memberConfig(cfg config.File, self, peersField string) (*embed.Config, error) {
	m := cfg.Store.Etcd.Embedded.WithDefaults(cfg.DataDir)
	if len(m.Peers) == 0 {
		return nil, fmt.Errorf("serve: %s (or %s): missing, the embedded etcd member needs every member as name=http://host:port, this instance's name %q among them", peersFlag, peersKey, self)
	}
	peers, errs := config.CheckEtcdPeers(peersField, peersField == peersKey, m.Peers, self)
	if len(errs) > 0 {
		return nil, fmt.Errorf("serve: %w", errors.Join(errs...))
	}
	if msg := config.CheckEtcdClientURL(m.ClientURL, peers, self); msg != "" {
		return nil, fmt.Errorf("serve: store.etcd.embedded.client_url (or --etcd-client): invalid value %q, %s", m.ClientURL, msg)
	}
	var own config.EtcdPeer
	initial := make([]string, len(peers))
	for i, p := range peers {
		initial[i] = p.String()
		if p.Name == self {
			own = p
		}
	}
	peerURL, err := url.Parse(own.URL)
	if err != nil {
		return nil, fmt.Errorf("serve: %s: %w", peersField, err)
	}
	clientURL, err := url.Parse(m.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("serve: store.etcd.embedded.client_url: %w", err)
	}
	ec := embed.NewConfig()
	ec.Name = self
	ec.Dir = m.DataDir
	ec.InitialCluster = strings.Join(initial, ",")
	ec.InitialClusterToken = "fulcrum"
	ec.ClusterState = embed.ClusterStateFlagNew
	if m.Join {
		ec.ClusterState = embed.ClusterStateFlagExisting
	}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	// fulcrum lists again after a compaction: keep an hour of history.
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = "1h"
	return ec, nil
}

// abortMember stops a member that is not ready. Its server is stopped
// first: Close alone waits for the client listeners, which start only once
// the member is ready.
func abortMember(e *embed.Etcd, closing *atomic.Bool) {
	closing.Store(true)
	e.Server.Stop()
	e.Close()
}

// embeddedMember is a running embedded etcd member; nil when serve runs
// none (its methods are nil-safe).
type embeddedMember struct {
	e    *embed.Etcd
	log  *slog.Logger
	done chan struct{}
	// closing quiets etcd's log (zapToSlog) once set.
	closing *atomic.Bool
}

// startEmbeddedEtcd starts the member cfg (or --etcd-embedded) asks for,
// if any, and waits until it is ready (in a cluster with a quorum), for at
// most its start_timeout. flags are serve's (nil: none). It returns cfg
// with store.etcd.endpoints defaulted to the member's client URL, for the
// store. A configuration error exits 2; a member that cannot start or
// reach a quorum, 1.
func startEmbeddedEtcd(ctx context.Context, cfg config.File, flags *embeddedFlags, log *slog.Logger) (config.File, *embeddedMember, error) {
	if !cfg.Store.Etcd.Embedded.Enabled() && !flags.forced() {
		return cfg, nil, nil
	}
	peersField := flags.peersField()
	if ctx == nil {
		ctx = context.Background()
	}
	in, err := instanceOf(cfg.Instance, "")
	if err != nil {
		return cfg, nil, exitCode(2, err)
	}
	ec, err := memberConfig(cfg, in.Name, peersField)
	if err != nil {
		return cfg, nil, exitCode(2, err)
	}
	m := cfg.Store.Etcd.Embedded.WithDefaults(cfg.DataDir)
	if ec.ClusterState == embed.ClusterStateFlagExisting {
		peers, _ := config.CheckEtcdPeers(peersField, false, m.Peers, in.Name) // checked by memberConfig
		if err := checkJoinVersion(ctx, peers, in.Name); err != nil {
			return cfg, nil, err
		}
	}
	elog := log.With("component", "etcd", "member", in.Name)
	closing := new(atomic.Bool)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(newZapToSlog(elog.Handler(), closing)))
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return cfg, nil, fmt.Errorf("serve: embedded etcd member %q (data %s, peer URL %s, client URL %s): %w", in.Name, ec.Dir, ec.ListenPeerUrls[0].String(), m.ClientURL, err)
	}
	timeout := m.StartTimeout.D()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		abortMember(e, closing)
		return cfg, nil, fmt.Errorf("serve: embedded etcd member %q: %w", in.Name, err)
	case <-timer.C:
		abortMember(e, closing)
		n := len(strings.Split(ec.InitialCluster, ","))
		return cfg, nil, fmt.Errorf("serve: embedded etcd member %q not ready within start_timeout %v: no quorum with its peers %s (%d of %d must run and reach each other's peer URLs)", in.Name, timeout, ec.InitialCluster, n/2+1, n)
	case <-ctx.Done():
		abortMember(e, closing)
		return cfg, nil, fmt.Errorf("serve: embedded etcd member %q: %w", in.Name, ctx.Err())
	}
	if len(cfg.Store.Etcd.Endpoints) == 0 {
		cfg.Store.Etcd.Endpoints = []string{m.ClientURL}
	}
	member := &embeddedMember{e: e, log: elog, done: make(chan struct{}), closing: closing}
	go member.watch()
	log.Info("embedded etcd member ready", "member", in.Name, "data", ec.Dir, "peer_url", ec.ListenPeerUrls[0].String(), "client_url", m.ClientURL, "cluster", ec.InitialCluster, "cluster_id", e.Server.Cluster().ID().String())
	return cfg, member, nil
}

// watch logs the member's failures until it is closed: a server error,
// or the member stopping by itself (removed from the cluster).
func (m *embeddedMember) watch() {
	errc := m.e.Err()
	for {
		select {
		case err, ok := <-errc:
			if !ok {
				return
			}
			if err != nil {
				m.log.Error("embedded etcd member failed", "err", err)
			}
		case <-m.e.Server.StopNotify():
			select {
			case <-m.done:
			default:
				m.log.Error("embedded etcd member stopped: this instance's store no longer has a local member (removed from the cluster?)")
			}
			return
		}
	}
}

// close stops the member; the balancer and the store are stopped before.
func (m *embeddedMember) close() {
	if m == nil {
		return
	}
	close(m.done)
	m.closing.Store(true)
	m.e.Close()
	m.log.Info("embedded etcd member closed")
}

// usesDataDir reports whether the embedded member keeps its data under
// data_dir (its default), which data_dir is then used for.
func usesDataDir(cfg config.File) bool {
	e := cfg.Store.Etcd.Embedded
	return e.Enabled() && e.DataDir == ""
}
