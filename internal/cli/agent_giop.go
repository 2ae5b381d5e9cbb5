package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func init() { agentSubcommands = append(agentSubcommands, newAgentGIOPCmd) }

type agentGIOPFlags struct {
	adminTLS                                                             adminTLSFlags
	listen, advertise, target, typeID, register, group, token, joinToken string
	load, mode, pullListen, pullAdvertise, cpuProfile                    string
	weight                                                               float64
	maxMessageSize                                                       int
	dialTimeout                                                          time.Duration
	retryForever                                                         bool

	// Set by check.
	targetRef ior.IOR
	advHost   string
	advPort   uint16 // 0: the port the listener got
}

func newAgentGIOPCmd() *cobra.Command {
	var f agentGIOPFlags
	cmd := &cobra.Command{
		Use:   "giop --listen ADDR --target IOR|corbaloc --register ADMIN_URL --group NAME",
		Short: "Side-car for an unmodified CORBA server: passes GIOP through, reports load, forwards shed clients",
		Long: `Run in front of an ORB server that has no fulcrum monitor built in. The agent
listens on --listen and passes GIOP from each client connection to --target
(the server's IOR or corbaloc URL) over a connection of its own, measuring
every two-way call: calls in flight, rate, latency and each client
connection's call rate. It registers with the balancer's group as the
target's IOR rewritten to point at --advertise (default: the listen address),
with the target's repository id kept, so clients the front door forwards
reach the agent. It reports load every report interval (--mode push) or
answers the balancer's pulls on --pull-listen (--mode pull).

Under a high advisory it answers the clients the advisory sends back, once
each per advisory epoch, with LOCATION_FORWARD to the group's reference
instead of passing the call on; their ORBs go back to the front door and are
bound to a less loaded replica. Under drain every call is forwarded.

On SIGTERM or SIGINT it deregisters, then closes each client connection
once its calls are answered (with CloseConnection, so ORBs reissue later
calls elsewhere). Its first lines on stdout are "listening on HOST:PORT" and
"reference IOR:...".`,
		Example: `  fulcrum agent giop --listen 0.0.0.0:4100 --advertise 10.0.0.7:4100 \
      --target "$(cat prime.ior)" --register http://10.0.0.1:7070 --group prime`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return exitCode(2, err)
			}
			return runAgentGIOP(cmd.Context(), &f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	f.adminTLS.register(fl)
	fl.StringVar(&f.listen, "listen", "", "address to accept GIOP clients on, host:port (port 0: any free port) (required)")
	fl.StringVar(&f.advertise, "advertise", "", "host:port clients reach the agent at, put in the registered IOR (default the listen address; required when it is a wildcard)")
	fl.StringVar(&f.target, "target", "", "the server's object reference: IOR:... or corbaloc:iiop:host:port/key (required)")
	fl.StringVar(&f.typeID, "type-id", "", "repository id of the object, e.g. IDL:Prime:1.0 (default: the target IOR's; a corbaloc target has none)")
	fl.StringVar(&f.register, "register", "", registerUsage)
	fl.StringVar(&f.group, "group", "", "group to join (with --register)")
	fl.StringVar(&f.token, "token", "", "replica token from an earlier registration (fulcrum ctl add) instead of registering")
	fl.StringVar(&f.joinToken, "join-token", os.Getenv("FULCRUM_JOIN_TOKEN"), "join or admin token to register with (env FULCRUM_JOIN_TOKEN)")
	addRetryForever(cmd, &f.retryForever)
	fl.Float64Var(&f.weight, "weight", 0, "relative capacity (default 1)")
	fl.StringVar(&f.load, "load", string(monitor.LoadRate), "what to report as load: rate (calls/s), inflight (calls in flight) or latency (ms)")
	fl.StringVar(&f.mode, "mode", protocol.MonitorPush, "report mode: push or pull")
	fl.StringVar(&f.pullListen, "pull-listen", "", "address to serve the balancer's pulls on (required with --mode pull)")
	fl.StringVar(&f.pullAdvertise, "pull-advertise", "", "URL the balancer pulls reports from (default http://<pull-listen address>/fulcrum/report)")
	fl.IntVar(&f.maxMessageSize, "max-message-size", giop.DefaultMaxMessageSize, "largest GIOP message_size accepted, in bytes; larger messages get MessageError")
	fl.DurationVar(&f.dialTimeout, "dial-timeout", giopagent.DefaultDialTimeout, "how long to wait for the target to accept a connection")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) to this file until the agent stops")
	_ = fl.MarkHidden("cpuprofile")
	return cmd
}

// check validates the flags before anything starts.
func (f *agentGIOPFlags) check() error {
	if f.listen == "" {
		return errors.New("--listen is required: the host:port GIOP clients connect to")
	}
	lhost, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return fmt.Errorf("--listen %q: must be host:port (%v)", f.listen, err)
	}
	if f.target == "" {
		return errors.New("--target is required: the server's IOR:... or corbaloc:iiop:... reference")
	}
	f.targetRef, err = ior.Parse(f.target)
	if err != nil {
		return fmt.Errorf("--target: %v", err)
	}
	if _, ok := f.targetRef.IIOP(); !ok {
		return errors.New("--target: the reference has no IIOP profile, so there is no address to pass calls to")
	}
	switch {
	case f.advertise != "":
		h, p, err := net.SplitHostPort(f.advertise)
		if err != nil || h == "" {
			return fmt.Errorf("--advertise %q: must be host:port", f.advertise)
		}
		port, err := strconv.ParseUint(p, 10, 16)
		if err != nil || port == 0 {
			return fmt.Errorf("--advertise %q: port must be in 1-65535", f.advertise)
		}
		f.advHost, f.advPort = h, uint16(port)
	case lhost == "" || net.ParseIP(lhost) != nil && net.ParseIP(lhost).IsUnspecified():
		return fmt.Errorf("--listen %q is a wildcard address: give --advertise host:port, the address clients reach the agent at", f.listen)
	default:
		f.advHost = lhost
	}
	if f.register == "" && f.token == "" {
		return errors.New("--register ADMIN_URL (with --group) or --token is required")
	}
	if f.register != "" && f.group == "" {
		return errors.New("--group is required with --register")
	}
	if _, err := registerURLs(f.register); err != nil {
		return err
	}
	switch monitor.LoadSource(f.load) {
	case monitor.LoadRate, monitor.LoadInflight, monitor.LoadLatency:
	case monitor.LoadCPU:
		return errors.New(`--load cpu: the agent measures its own process's CPU, not the server's; use rate, inflight or latency`)
	default:
		return fmt.Errorf("--load %q: must be rate, inflight or latency", f.load)
	}
	switch f.mode {
	case protocol.MonitorPush:
		if f.pullListen != "" {
			return errors.New("--pull-listen needs --mode pull")
		}
	case protocol.MonitorPull:
		if f.pullListen == "" {
			return errors.New("--mode pull needs --pull-listen: the balancer pulls reports from the agent over HTTP")
		}
		if _, _, err := net.SplitHostPort(f.pullListen); err != nil {
			return fmt.Errorf("--pull-listen %q: must be host:port (%v)", f.pullListen, err)
		}
	default:
		return fmt.Errorf("--mode %q: must be push or pull", f.mode)
	}
	if f.pullAdvertise != "" {
		if f.pullListen == "" {
			return errors.New("--pull-advertise needs --pull-listen")
		}
		u, err := url.Parse(f.pullAdvertise)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--pull-advertise %q: must be an absolute http:// or https:// URL", f.pullAdvertise)
		}
	}
	if f.maxMessageSize < 1<<10 || f.maxMessageSize > 1<<30 {
		return fmt.Errorf("--max-message-size %d: must be in [1024, 1073741824]", f.maxMessageSize)
	}
	if f.dialTimeout <= 0 {
		return fmt.Errorf("--dial-timeout %s: must be > 0", f.dialTimeout)
	}
	return nil
}

func runAgentGIOP(ctx context.Context, f *agentGIOPFlags, stdout io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	adminHC, err := f.adminTLS.client(10 * time.Second)
	if err != nil {
		return exitCode(2, err)
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.listen, err)
	}
	defer ln.Close()
	port := f.advPort
	if port == 0 {
		port = uint16(ln.Addr().(*net.TCPAddr).Port)
	}
	agentOpts := giopagent.Options{
		Target:      f.targetRef,
		TypeID:      f.typeID,
		Limits:      giop.Limits{MaxMessageSize: f.maxMessageSize},
		DialTimeout: f.dialTimeout,
		Logger:      log,
	}
	ref := giopagent.Reference(f.targetRef, f.typeID, f.advHost, port)

	var pullLn net.Listener
	var pullURL string
	if f.mode == protocol.MonitorPull {
		pullLn, err = net.Listen("tcp", f.pullListen)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", f.pullListen, err)
		}
		defer pullLn.Close()
		pullURL = f.pullAdvertise
		if pullURL == "" {
			pullURL = "http://" + pullAddress(pullLn.Addr()) + monitor.DefaultPullPath
		}
	}
	mon, err := monitor.New(monitor.Options{
		Admins: checkedRegisterURLs(f.register), Group: f.group, Address: ref.String(), Token: f.token, JoinToken: f.joinToken,
		Weight: f.weight, Mode: f.mode, PullURL: pullURL, Load: monitor.LoadSource(f.load), Logger: log,
		HTTPClient:       adminHC,
		RegisterAttempts: registerAttempts(f.retryForever),
	})
	if err != nil {
		return exitCode(2, err)
	}
	agentOpts.Monitor = mon
	agent, err := giopagent.New(agentOpts)
	if err != nil {
		return exitCode(2, err)
	}
	stop := catchStop()
	defer stop.release()
	serveErr := make(chan error, 2)
	go func() { serveErr <- agent.Serve(ln) }()
	var pullSrv *http.Server
	if pullLn != nil {
		mux := http.NewServeMux()
		path := "/"
		if u, err := url.Parse(pullURL); err == nil && u.Path != "" {
			path = u.Path
		}
		mux.Handle(path, mon.PullHandler())
		pullSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := pullSrv.Serve(pullLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				serveErr <- err
			}
		}()
	}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	fmt.Fprintf(stdout, "reference %s\n", ref)
	if err := mon.Start(); err != nil {
		return err
	}
	waitCtx, stopWait := untilMonitorFails(ctx, mon)
	defer stopWait()
	_, runErr := stop.await(waitCtx, serveErr)
	runErr = monitorErr(runErr, mon)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mon.Close(sctx); err != nil {
		log.Warn("deregistering failed", "err", err)
	}
	if err := agent.Shutdown(sctx); err != nil {
		log.Warn("closing client connections", "err", err)
	}
	if pullSrv != nil {
		_ = pullSrv.Shutdown(sctx)
	}
	if errors.Is(runErr, giopagent.ErrClosed) {
		runErr = nil
	}
	return runErr
}

// pullAddress is the host:port the balancer reaches a pull listener at:
// its own address, with a wildcard host replaced by loopback.
func pullAddress(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	host := ta.IP.String()
	if ta.IP == nil || ta.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}
