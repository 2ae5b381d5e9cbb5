package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func init() { subcommands = append(subcommands, newServeCmd) }

func newServeCmd() *cobra.Command {
	var (
		configPath string
		insecure   bool
		check      bool
		adminAddr  string
		dataDir    string
		etcd       string
		cpuProfile string
		embedded   *embeddedFlags
	)
	cmd := &cobra.Command{
		Use:   "serve [--config fulcrum.yaml] [--check]",
		Short: "Run a balancer",
		Long: `Run a balancer: the admin API, and one front door per group.

With no config file it starts with the embedded defaults: store in
./fulcrum-data, admin API on 127.0.0.1:7070, no groups (create them with
"fulcrum ctl create" or PUT /v1/groups/{name}). With store.etcd in the
config file, or --etcd, the state is on etcd instead of data_dir; an etcd
not reachable within store.etcd.dial_timeout makes serve exit 1, naming the
endpoints tried (docs/cluster.md). With --etcd-embedded (or
store.etcd.embedded) serve runs an etcd member itself, and three instances
started with the same --etcd-peers form an etcd cluster with nothing else
installed. Groups declared in the config
file are applied at every start (on etcd: only created when absent). An invalid config file exits with status 2
and prints every problem, one a line in line order, naming the file, line,
key, value and what is allowed.

SIGHUP (or POST /v1/reload) re-reads the config file and applies it without
a restart; a file that cannot be used changes nothing. With --check, the
config file is only checked: every problem is printed and the command exits
2, or it prints "<file>: ok" and exits 0; no store is opened and nothing is
bound (like nginx -t or haproxy -c).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := embedded.parse(); err != nil { // serve_embedded.go
				return exitCode(2, err)
			}
			var eps []string
			if cmd.Flags().Changed("etcd") {
				var err error
				if eps, err = parseEtcdFlag(etcd); err != nil {
					return exitCode(2, err)
				}
			}
			override := func(f *config.File) {
				if cmd.Flags().Changed("admin") {
					f.Admin = adminAddr
				}
				if cmd.Flags().Changed("data-dir") {
					f.DataDir = dataDir
				}
				if eps != nil {
					f.Store.Etcd.Endpoints = eps
				}
				embedded.apply(f)
			}
			if check {
				return checkConfig(configPath, override, insecure, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			cfg := config.Default()
			if configPath != "" {
				var err error
				cfg, err = config.Load(configPath, fileChecks()...)
				if err != nil {
					printConfigErrors(cmd.ErrOrStderr(), err)
					return reported(2, err)
				}
			}
			override(&cfg)
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return exitCode(2, err)
			}
			defer stopProfile()
			dataDirSet := cmd.Flags().Changed("data-dir") || cfg.DataDir != config.DefaultDataDir
			return serve(cmd.Context(), serveOptions{embedded: embedded, dataDirSet: dataDirSet, cfg: cfg, configPath: configPath, override: override, insecure: insecure, logOut: cmd.ErrOrStderr()})
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "YAML config file (see docs/config.md)")
	cmd.Flags().BoolVar(&check, "check", false, "check the config file and its certificates, print every problem and exit 0 or 2; binds nothing")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "allow the admin API on a non-loopback address without admin_token")
	cmd.Flags().StringVar(&adminAddr, "admin", "127.0.0.1:7070", "admin API address (overrides the config file)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "./fulcrum-data", "directory of the embedded store (overrides the config file); with store.etcd only the embedded etcd member's (<data_dir>/etcd)")
	cmd.Flags().StringVar(&etcd, "etcd", "", "keep the state on etcd at these client URLs, separated by commas (overrides store.etcd.endpoints)")
	// For fulcrum bench --profile: where the front doors spend their time.
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) to this file until the balancer stops")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	embedded = addEmbeddedFlags(cmd)
	return cmd
}

// serveOptions are what serve runs with.
type serveOptions struct {
	// cfg is the config, the command line's overrides applied.
	cfg config.File
	// configPath is the config file cfg was read from; "" when none (the
	// file's groups are then not applied, and there is nothing to
	// reload).
	configPath string
	// override applies the command line's --admin and --data-dir to a
	// config file read again.
	override func(*config.File)
	insecure bool
	logOut   io.Writer
	// dataDirSet tells that data_dir was set (in the file or by
	// --data-dir): with store.etcd it is not used, which is logged.
	dataDirSet bool
	// embedded are the flags of the embedded etcd member; nil: none
	// given.
	embedded *embeddedFlags
}

// serve runs a balancer until ctx is done or SIGINT/SIGTERM arrives;
// SIGHUP reloads the config file.
func serve(ctx context.Context, o serveOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// SIGHUP is caught from here on: before, it would end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, logOut := o.cfg, o.logOut
	level := new(slog.LevelVar)
	level.Set(parseLevel(cfg.LogLevel))
	logH := newLogHandler(logOut, level, cfg.LogFormat)
	log := slog.New(logH)
	info := build()
	if err := checkAdminExposure(cfg.Admin, cfg.AdminToken, o.insecure); err != nil {
		return exitCode(2, err)
	}
	adminCerts, err := loadCertificates(o.configPath, cfg, log) // serve_tls.go
	if err != nil {
		return exitCode(2, err)
	}
	// The embedded etcd member, if any, closes after the store (and so
	// after the balancer). From here on cfg's store.etcd.endpoints are
	// its client URL when the file gave none; a reload compares with the
	// file as read (fileCfg).
	fileCfg := cfg
	cfg, member, err := startEmbeddedEtcd(ctx, cfg, o.embedded, log) // serve_embedded.go
	if err != nil {
		return err
	}
	defer member.close()
	st, err := openStore(ctx, cfg, o.dataDirSet && !usesDataDir(cfg), log) // serve_store.go
	if err != nil {
		return err
	}
	defer st.Close()

	accessW, accessF, err := openAccessLog(cfg.AccessLog, logOut)
	if err != nil {
		return fmt.Errorf("access_log: %w", err)
	}
	access := &accessSink{w: accessW, f: accessF}
	defer access.close()
	var accessLog io.Writer
	if cfg.AccessLog != "" {
		accessLog = access
	}
	stopReopen := reopenOnSIGUSR1(access.reopen, log) // the file a reload left in force
	defer stopReopen()

	adminLn, err := net.Listen("tcp", cfg.Admin)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	// The URL replicas are told to report to: a wildcard listen address
	// is advertised as loopback, like a front door's.
	httpAdminURL := registry.AdvertiseFor(protocol.ProtocolHTTP, adminLn.Addr().String())
	adminSwitch := &adminListener{Listener: adminLn}
	adminSwitch.set.Store(adminCerts)
	adminLn = adminSwitch
	adminURL := adminURLFor(httpAdminURL, adminCerts)
	instance, err := instanceOf(cfg.Instance, adminURL)
	if err != nil {
		adminLn.Close()
		return exitCode(2, err)
	}
	cr, err := openCluster(ctx, cfg, st, instance, info.Version, log) // serve_cluster.go
	if err != nil {
		adminLn.Close()
		return err
	}
	defer closeCluster(cr, log)
	lead, err := startLeader(cfg, st, instance.Name, log) // serve_leader.go; nil on a single node
	if err != nil {
		adminLn.Close()
		return err
	}
	defer lead.close(log) // before the directory's entry and the store close
	// serve_compact.go; nil on a single node.
	compact, err := startCompaction(cfg, st, cr, lead, 0, log)
	if err != nil {
		adminLn.Close()
		return err
	}
	defer compact.close() // before the election and the directory

	bopts := balancer.Options{Store: st, Logger: log, JoinToken: cfg.JoinToken, AccessLog: accessLog, AccessLogJSON: cfg.LogFormat == config.LogFormatJSON, HTTPEngine: cfg.HTTPEngine, SharedConfig: cfg.Store.Etcd.Enabled(), Follow: cfg.Store.Etcd.Enabled(), AdminURL: adminURL, AdminAddr: adminLn.Addr().String(),
		Peers: cr.peers, OnFrontDoors: cr.frontDoorsChanged}
	lead.wire(&bopts, cr.dir)
	rlogs := newReplicatedLogs(cfg, st, compact) // serve_replicated.go; closed after the balancer
	defer func() {
		if err := rlogs.close(); err != nil {
			log.Warn("cannot close the replicated log", "err", err)
		}
	}()
	bopts.ReplicatedLog, bopts.Instance = rlogs.open, instance.Name
	peers, err := newPeerTLS(cfg) // serve_peertls.go; nil on a single node
	if err != nil {
		adminLn.Close()
		return exitCode(2, err)
	}
	bopts.PeerClient = peers.client()
	b, err := balancer.New(bopts)
	if err != nil {
		adminLn.Close()
		return err
	}
	cr.follow(b)
	lead.attach(b)
	fromFile := o.configPath != ""
	if fromFile {
		// The file wins for what it declares, and a config group it no
		// longer declares is deleted. Without a file, stored groups stay.
		// On etcd (shared by instances) the file's groups are only
		// created when absent.
		if err := b.ApplyConfig(cfg.Groups); err != nil {
			adminLn.Close()
			return exitCode(2, err)
		}
	}
	if adminCerts != nil {
		b.WatchCertificates(adminCerts)
	}
	if err := b.Start(); err != nil {
		adminLn.Close()
		_ = b.Shutdown(context.Background())
		return err
	}
	token := api.NewAdminToken(cfg.AdminToken)
	// Certificates are re-read at every reload, even when the file is
	// refused (reloadCertificates); applyAdminTLS is where a changed
	// admin_tls is to be applied to the admin listener.
	admin := &adminTLSSwitch{ln: adminSwitch, b: b, log: log, httpURL: httpAdminURL}
	rl := &reloader{peerToken: lead.setToken, peerTLS: peers.reload, reloadCertificates: b.ReloadCertificates, applyAdminTLS: admin.apply, logFormat: logH.setFormat, path: o.configPath, override: o.override, insecure: o.insecure, b: b, log: log, level: level, access: access, logOut: logOut, token: token, started: fileCfg, cur: fileCfg}
	var reload func() (protocol.ReloadResult, error)
	if fromFile {
		reload = rl.reload
	}
	srv := &http.Server{
		Handler:           api.New(b, api.Options{Token: token, Reload: reload, Logger: log, Build: info, Cluster: cr.describe, Leaders: withoutCompaction(lead.leaders()), Collectors: append(append(storeCollectors(st), lead.collectors()...), compact.collectors()...)}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	stop := catchStop()
	defer stop.release()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(adminLn) }()
	if cfg.Store.Etcd.Enabled() {
		e := cfg.Store.Etcd.WithDefaults()
		log.Info("fulcrum serving", "admin", adminURL, "etcd", strings.Join(e.Endpoints, ","), "prefix", e.Prefix, "instance", instance.Name, "instance_admin_url", instance.AdminURL, "version", info.Version, "commit", info.Commit)
	} else {
		log.Info("fulcrum serving", "admin", adminURL, "data_dir", cfg.DataDir, "instance", instance.Name, "version", info.Version, "commit", info.Commit)
	}

	var runErr error
	for {
		sig, err := stop.awaitOrReload(ctx, serveErr, hup)
		if sig == syscall.SIGHUP {
			if !fromFile {
				log.Warn("SIGHUP: started without --config, there is no config file to reload")
			} else {
				_, _ = rl.reload() // logged
			}
			continue
		}
		switch {
		case err != nil:
			runErr = fmt.Errorf("admin API: %w", err)
		case sig != nil:
			log.Info("shutting down", "signal", sig.String())
		}
		break
	}
	sctx, cancel := context.WithTimeout(context.Background(), rl.shutdownTimeout().D())
	defer cancel()
	compact.close()
	closeCluster(cr, log) // the entry goes first: others stop listing this instance
	errs := []error{runErr, b.Shutdown(sctx), srv.Shutdown(sctx)}
	if err := errors.Join(errs...); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// checkAdminExposure refuses a non-loopback admin address without a token.
func checkAdminExposure(addr, token string, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("admin: invalid address %q: %v", addr, err)
	}
	if token != "" || insecure {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("admin: refusing to listen on non-loopback address %q without admin_token; set admin_token in the config or pass --insecure", addr)
}

// parseLevel is the slog level of a log_level; info for anything else.
func parseLevel(level string) slog.Level {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	return lv
}
