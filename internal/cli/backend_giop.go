package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// runPrimeGIOP is "fulcrum backend prime --giop": the Prime servant over
// GIOP, with the monitor built in when it joins a group.
func runPrimeGIOP(ctx context.Context, f primeFlags, stdout interface{ Write([]byte) (int, error) }) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if f.mode != "" && f.mode != protocol.MonitorPush {
		return exitCode(2, fmt.Errorf("--monitor: invalid value %q with --giop, must be push (a GIOP replica has no HTTP endpoint to pull from)", f.mode))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	adminHC, err := f.adminTLS.client(10 * time.Second)
	if err != nil {
		return exitCode(2, err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hostPort := f.advertise
	if hostPort == "" {
		hostPort = ln.Addr().String()
	}
	host, portStr, err := net.SplitHostPort(hostPort)
	port, perr := strconv.ParseUint(portStr, 10, 16)
	if err != nil || perr != nil || host == "" || port == 0 {
		ln.Close()
		return exitCode(2, fmt.Errorf("--advertise: invalid value %q with --giop, must be host:port with a port in 1-65535", hostPort))
	}
	opts := backend.GIOPPrimeOptions{Group: f.group, Logger: log}
	srv := backend.NewGIOPPrime(opts)
	ref := srv.Reference(host, uint16(port))
	addr := ref.String()
	if f.register != "" || f.token != "" {
		mon, err := monitor.New(monitor.Options{
			Admins: checkedRegisterURLs(f.register), Group: f.group, Address: addr, Token: f.token, JoinToken: f.joinToken,
			Weight: f.weight, CPUs: f.cpus, Mode: f.mode, Load: monitor.LoadSource(f.load), Logger: log,
			HTTPClient:       adminHC,
			RegisterAttempts: registerAttempts(f.retryForever),
		})
		if err != nil {
			ln.Close()
			return exitCode(2, err)
		}
		opts.Monitor = mon
		srv = backend.NewGIOPPrime(opts)
	}
	stop := catchStop()
	defer stop.release()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on %s\n", addr)
	log.Info("serving Prime over GIOP", "corbaloc", fmt.Sprintf("corbaloc:iiop:1.2@%s/%s", net.JoinHostPort(host, portStr), backend.GIOPPrimeKey))
	if opts.Monitor != nil {
		if err := opts.Monitor.Start(); err != nil {
			_ = srv.Shutdown(context.Background())
			return err
		}
	}
	waitCtx, stopWait := untilMonitorFails(ctx, opts.Monitor)
	defer stopWait()
	_, runErr := stop.await(waitCtx, serveErr)
	runErr = monitorErr(runErr, opts.Monitor)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if opts.Monitor != nil {
		// Deregister first, so that no new client is sent here.
		if err := opts.Monitor.Close(sctx); err != nil {
			log.Warn("deregistering failed", "err", err)
		}
	}
	if err := srv.Shutdown(sctx); err != nil && runErr == nil {
		runErr = err
	}
	if errors.Is(runErr, backend.ErrGIOPServerClosed) {
		runErr = nil
	}
	return runErr
}
