package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/monitor"
)

// statefulFlags are the flags of "fulcrum backend counter" and "fulcrum
// backend relay".
type statefulFlags struct {
	listen, advertise, register, group, token, joinToken string
	// next and proxy are the relay's.
	next, proxy        string
	giop, retryForever bool
	// dedup is the counter's: apply each Idempotency-Key once.
	dedup    bool
	adminTLS adminTLSFlags
}

func (f *statefulFlags) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9001", "address to listen on (port 0: any free port)")
	fl.StringVar(&f.advertise, "advertise", "", "base URL clients reach this replica at (default http://<listen address>; with --giop host:port)")
	fl.StringVar(&f.register, "register", "", registerUsage)
	fl.StringVar(&f.group, "group", "", "group to join (with --register)")
	fl.StringVar(&f.token, "token", "", "replica token from an earlier registration (fulcrum ctl add) instead of registering")
	fl.StringVar(&f.joinToken, "join-token", os.Getenv("FULCRUM_JOIN_TOKEN"), "join or admin token to register with (env FULCRUM_JOIN_TOKEN)")
	fl.BoolVar(&f.giop, "giop", false, "serve the Counter CORBA interface over GIOP/IIOP instead of HTTP")
	f.adminTLS.register(fl)
	addRetryForever(cmd, &f.retryForever)
}

func (f *statefulFlags) check() error {
	if f.register != "" && f.group == "" {
		return exitCode(2, errors.New("--group is required with --register"))
	}
	if _, err := registerURLs(f.register); err != nil {
		return exitCode(2, err)
	}
	return nil
}

const stateHelp = `The state (GET /fulcrum/state, and PUT /fulcrum/state to replace it; over
GIOP get_state and set_state) is one JSON object, content type
application/json:
  {"value":5,"increments":5,"last_changed":"2026-11-27T10:00:00Z","last_id":1234}
increments counts the additions applied; last_changed and last_id are the
time and a random id of the last one. A PUT body that is not exactly such an
object (all four fields, nothing else) gets 400 with code invalid_state and
a message naming what is wrong, and changes nothing (over GIOP set_state
raises FT::InvalidState).

Determinism: when a request carries Fulcrum-Time (RFC 3339, UTC) and
Fulcrum-Seed (a decimal uint64), as a replicated group's front door stamps
ordered requests, last_changed is that time and last_id is drawn from that
seed instead of the clock and the process's random source, so replicas that
apply the same requests reach byte-identical states. Answers carry nothing
that differs between replicas.

Over GIOP (--giop) the interface is
  module FT { // repository ids IDL:omg.org/FT/...:1.0
    typedef sequence<octet> State;
    exception NoStateAvailable {}; exception InvalidState {};
    interface Checkpointable {
      State get_state() raises (NoStateAvailable);
      void set_state(in State s) raises (InvalidState); }; };
  interface Counter : FT::Checkpointable {  // IDL:Counter:1.0
    long long increment(); long long value(); };
with object key "Counter"; --advertise is host:port and the first line is
"listening on <IOR>".

With --register the replica joins a group through the Go monitor library
(push mode, load as calls/s; over GIOP the calls are not measured) and
deregisters on SIGTERM or SIGINT.`

func newBackendCounterCmd() *cobra.Command {
	var f statefulFlags
	cmd := &cobra.Command{
		Use:   "counter --listen ADDR [--giop] [--register ADMIN_URL[,...] --group NAME]",
		Short: "Serve a stateful counter, the last tier of the three-tier replication test application",
		Long: `Serve the back-end tier of the three-tier test application of the MEAD
replication paper (Paulos and Narasimhan, 2006): a stateful counter.

  POST /increment[?by=K]  adds K (default 1, 1 to 2147483648) → {"value": n}
  GET  /value             → {"value": n, "increments": k}
  GET  /fulcrum/state     the state, see below
  PUT  /fulcrum/state     replaces the state → 204
  GET  /healthz           → {"status": "ok"}

Increments are applied one at a time under a lock: N concurrent calls leave
the value at N. Its first line on stdout is "listening on <URL>".

--dedup makes it a deduplicating callee: a request carrying an
Idempotency-Key it has seen gets the reply the first one got (status,
headers and body) and is not applied again; one that comes while the first
runs waits for it. It remembers the last 10000 keys, the oldest forgotten
first (a forgotten key is applied again), and replies up to 64 KiB. This
is what a replicated group's outgoing calls need to be applied exactly once
(each carries "<group>/<position>/<index>" as its Idempotency-Key).

` + stateHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if f.giop {
				if f.dedup {
					return exitCode(2, errors.New("--dedup: not available with --giop"))
				}
				return runCounterGIOP(cmd.Context(), f, cmd.OutOrStdout(), nil)
			}
			return runCounterHTTP(cmd.Context(), f, cmd.OutOrStdout(), func(c *backend.Counter) (http.Handler, error) {
				h := backend.NewCounterHandler(c, backend.CounterOptions{})
				if f.dedup {
					return backend.NewDedup(h, backend.DefaultDedupKeys), nil
				}
				return h, nil
			})
		},
	}
	f.addFlags(cmd)
	cmd.Flags().BoolVar(&f.dedup, "dedup", false, fmt.Sprintf("apply each Idempotency-Key once: a request with a key already seen gets the first reply and changes nothing (the last %d keys are remembered)", backend.DefaultDedupKeys))
	return cmd
}

func newBackendRelayCmd() *cobra.Command {
	var f statefulFlags
	cmd := &cobra.Command{
		Use:   "relay --listen ADDR --next URL|IOR [--proxy URL] [--giop]",
		Short: "Serve the middle tier of the three-tier replication test application: call the counter, add its answer",
		Long: `Serve the middle tier of the three-tier test application of the MEAD
replication paper (Paulos and Narasimhan, 2006): on POST /increment[?by=K]
it calls POST /increment[?by=K] of the next tier (--next, the base URL of a
counter or of a front door before counters), adds the value answered to its
own counter and answers
  {"value": own, "next": theirs}
A failed call answers 502 (code next_failed, naming the URL and the error)
and leaves its counter unchanged. GET /value, GET and PUT /fulcrum/state and
GET /healthz are those of "fulcrum backend counter", of its own counter.

--proxy sends its calls to the next tier through that HTTP proxy (for a
replicated relay: its agent, which keys the copies the replicas make of each
call). With --giop, --next is the next Counter's IOR or corbaloc URL, called
on fulcrum's own ORB, and the relay serves the Counter interface itself;
--proxy is not available with --giop.

` + stateHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if f.next == "" {
				return exitCode(2, errors.New("--next is required: the next tier's base URL (with --giop its IOR or corbaloc URL)"))
			}
			if f.giop {
				if f.proxy != "" {
					return exitCode(2, errors.New("--proxy: not available with --giop"))
				}
				return runCounterGIOP(cmd.Context(), f, cmd.OutOrStdout(), &f.next)
			}
			next, err := backend.ParseNextURL(f.next)
			if err != nil {
				return exitCode(2, fmt.Errorf("--next: %w", err))
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.Proxy = nil
			if f.proxy != "" {
				u, err := url.Parse(f.proxy)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return exitCode(2, fmt.Errorf("--proxy: invalid value %q, must be an http:// or https:// proxy URL such as http://127.0.0.1:3128", f.proxy))
				}
				tr.Proxy = http.ProxyURL(u)
			}
			hc := &http.Client{Transport: tr, Timeout: backend.DefaultNextTimeout}
			defer tr.CloseIdleConnections()
			return runCounterHTTP(cmd.Context(), f, cmd.OutOrStdout(), func(c *backend.Counter) (http.Handler, error) {
				return backend.NewRelayHandler(c, backend.RelayOptions{Next: next, Client: hc})
			})
		},
	}
	f.addFlags(cmd)
	cmd.Flags().StringVar(&f.next, "next", "", "the next tier: a counter's (or a front door's) base URL; with --giop its IOR or corbaloc URL")
	cmd.Flags().StringVar(&f.proxy, "proxy", "", "HTTP proxy URL the calls to --next go through (default: none, the environment's proxy settings are ignored)")
	return cmd
}

// counterMonitor is the monitor of a counter or relay registering addr, nil
// without --register or --token.
func counterMonitor(f statefulFlags, addr string, log *slog.Logger) (*monitor.Monitor, error) {
	if f.register == "" && f.token == "" {
		return nil, nil
	}
	adminHC, err := f.adminTLS.client(10 * time.Second)
	if err != nil {
		return nil, exitCode(2, err)
	}
	mon, err := monitor.New(monitor.Options{
		Admins: checkedRegisterURLs(f.register), Group: f.group, Address: addr, Token: f.token, JoinToken: f.joinToken,
		Logger: log, HTTPClient: adminHC, RegisterAttempts: registerAttempts(f.retryForever),
	})
	if err != nil {
		return nil, exitCode(2, err)
	}
	return mon, nil
}

// runCounterHTTP serves the handler newHandler makes of a fresh counter
// until stopped.
func runCounterHTTP(ctx context.Context, f statefulFlags, stdout interface{ Write([]byte) (int, error) }, newHandler func(*backend.Counter) (http.Handler, error)) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	handler, err := newHandler(&backend.Counter{})
	if err != nil {
		return exitCode(2, err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := f.advertise
	if addr == "" {
		addr = "http://" + ln.Addr().String()
	}
	mon, err := counterMonitor(f, addr, log)
	if err != nil {
		ln.Close()
		return err
	}
	if mon != nil {
		handler = mon.Handler(handler)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	return awaitStop(ctx, stdout, addr, mon, log, serveErr, srv.Shutdown)
}

// runCounterGIOP serves a Counter servant until stopped: the relay's when
// next is set (the next Counter's reference), else the counter's.
func runCounterGIOP(ctx context.Context, f statefulFlags, stdout interface{ Write([]byte) (int, error) }, next *string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := backend.GIOPCounterOptions{Logger: log}
	if next != nil {
		o, err := orb.New(orb.Options{})
		if err != nil {
			return err
		}
		defer o.Close()
		obj, err := o.Resolve(*next)
		if err != nil {
			return exitCode(2, fmt.Errorf("--next: invalid value %q with --giop, must be an IOR: or corbaloc: reference: %w", *next, err))
		}
		opts.Next = backend.CounterClient{Object: obj}.Increment
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
	if err != nil || perr != nil || host == "" || port == 0 || strings.Contains(hostPort, "/") {
		ln.Close()
		return exitCode(2, fmt.Errorf("--advertise: invalid value %q with --giop, must be host:port with a port in 1-65535", hostPort))
	}
	srv := backend.NewGIOPCounter(&backend.Counter{}, opts)
	addr := srv.Reference(host, uint16(port)).String()
	mon, err := counterMonitor(f, addr, log)
	if err != nil {
		ln.Close()
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("serving Counter over GIOP", "corbaloc", fmt.Sprintf("corbaloc:iiop:1.2@%s/%s", net.JoinHostPort(host, portStr), backend.GIOPCounterKey))
	err = awaitStop(ctx, stdout, addr, mon, log, serveErr, srv.Shutdown)
	if errors.Is(err, backend.ErrGIOPServerClosed) {
		err = nil
	}
	return err
}

// awaitStop prints "listening on addr", starts mon, serves until a stop
// signal, ctx's end or the monitor giving up, then deregisters and shuts
// down.
func awaitStop(ctx context.Context, stdout interface{ Write([]byte) (int, error) }, addr string, mon *monitor.Monitor, log *slog.Logger, serveErr chan error, shutdown func(context.Context) error) error {
	stop := catchStop()
	defer stop.release()
	fmt.Fprintf(stdout, "listening on %s\n", addr)
	if mon != nil {
		if err := mon.Start(); err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdown(sctx)
			return err
		}
	}
	waitCtx, stopWait := untilMonitorFails(ctx, mon)
	defer stopWait()
	_, runErr := stop.await(waitCtx, serveErr)
	runErr = monitorErr(runErr, mon)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if mon != nil {
		if err := mon.Close(sctx); err != nil {
			log.Warn("deregistering failed", "err", err)
		}
	}
	if err := shutdown(sctx); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}
