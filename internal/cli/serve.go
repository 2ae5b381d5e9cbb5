package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func init() { subcommands = append(subcommands, newServeCmd) }

func newServeCmd() *cobra.Command {
	var (
		configPath string
		insecure   bool
		adminAddr  string
		dataDir    string
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "serve [--config fulcrum.yaml]",
		Short: "Run a balancer",
		Long: `Run a balancer: the admin API, and one front door per group.

With no config file it starts with the embedded defaults: store in
./fulcrum-data, admin API on 127.0.0.1:7070, no groups (create them with
"fulcrum ctl create" or PUT /v1/groups/{name}). Groups declared in the config
file are applied at every start. An invalid config file exits with status 2
and names the file, line, key, value and what is allowed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := config.Default()
			if configPath != "" {
				var err error
				cfg, err = config.Load(configPath)
				if err != nil {
					return exitCode(2, err)
				}
			}
			if cmd.Flags().Changed("admin") {
				cfg.Admin = adminAddr
			}
			if cmd.Flags().Changed("data-dir") {
				cfg.DataDir = dataDir
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return exitCode(2, err)
			}
			defer stopProfile()
			return serve(cmd.Context(), cfg, configPath, insecure, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "YAML config file (see docs/config.md)")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "allow the admin API on a non-loopback address without admin_token")
	cmd.Flags().StringVar(&adminAddr, "admin", "127.0.0.1:7070", "admin API address (overrides the config file)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "./fulcrum-data", "directory of the embedded store (overrides the config file)")
	// For fulcrum bench --profile: where the front doors spend their time.
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) to this file until the balancer stops")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	return cmd
}

// serve runs a balancer until ctx is done or SIGINT/SIGTERM arrives.
// configPath is the config file cfg was read from ("" for none), whose
// groups are applied.
func serve(ctx context.Context, cfg config.File, configPath string, insecure bool, logOut io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	fromFile := configPath != ""
	log := newLogger(logOut, cfg.LogLevel)
	if err := checkAdminExposure(cfg.Admin, cfg.AdminToken, insecure); err != nil {
		return exitCode(2, err)
	}
	adminTLS, err := loadCertificates(configPath, cfg, log) // serve_tls.go
	if err != nil {
		return exitCode(2, err)
	}
	st, err := boltstore.Open(cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()

	var accessLog io.Writer
	switch cfg.AccessLog {
	case "":
	case "-":
		accessLog = logOut
	default:
		f, err := os.OpenFile(cfg.AccessLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("access_log: %w", err)
		}
		defer f.Close()
		accessLog = f
	}

	adminLn, err := net.Listen("tcp", cfg.Admin)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	// The URL replicas are told to report to: a wildcard listen address
	// is advertised as loopback, like a front door's.
	adminURL := registry.AdvertiseFor(protocol.ProtocolHTTP, adminLn.Addr().String())
	if adminTLS != nil {
		adminLn = tls.NewListener(adminLn, adminTLS.TLSConfig())
		adminURL = "https://" + strings.TrimPrefix(adminURL, "http://")
	}

	b, err := balancer.New(balancer.Options{Store: st, Logger: log, JoinToken: cfg.JoinToken, AccessLog: accessLog, HTTPEngine: cfg.HTTPEngine, AdminURL: adminURL, AdminAddr: adminLn.Addr().String()})
	if err != nil {
		adminLn.Close()
		return err
	}
	if fromFile {
		// The file wins for what it declares, and a config group it no
		// longer declares is deleted. Without a file, stored groups stay.
		if err := b.ApplyConfig(cfg.Groups); err != nil {
			adminLn.Close()
			return exitCode(2, err)
		}
	}
	if adminTLS != nil {
		b.WatchCertificates(adminTLS)
	}
	if err := b.Start(); err != nil {
		adminLn.Close()
		_ = b.Shutdown(context.Background())
		return err
	}
	stopHUP := reloadCertificatesOnHUP(b.ReloadCertificates, log) // serve_tls.go
	defer stopHUP()
	srv := &http.Server{
		Handler:           api.New(b, api.Options{AdminToken: cfg.AdminToken, Logger: log, Version: Version}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	stop := catchStop()
	defer stop.release()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(adminLn) }()
	log.Info("fulcrum serving", "admin", adminURL, "data_dir", cfg.DataDir, "version", Version)

	var runErr error
	switch sig, err := stop.await(ctx, serveErr); {
	case err != nil:
		runErr = fmt.Errorf("admin API: %w", err)
	case sig != nil:
		log.Info("shutting down", "signal", sig.String())
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout.D())
	defer cancel()
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

func newLogger(w io.Writer, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv}))
}
