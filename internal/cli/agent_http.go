package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func init() { agentSubcommands = append(agentSubcommands, newAgentHTTPCmd) }

type agentHTTPFlags struct {
	adminTLS                                           adminTLSFlags
	target, address, register, group, token, joinToken string
	stubStatus, cgroup, load, mode, listen, advertise  string
	pids                                               []int
	cpus, weight                                       float64
	sample, wait                                       time.Duration
	retryForever                                       bool
}

// agentLoads maps --load to the monitor's load sources.
var agentLoads = map[string]monitor.LoadSource{
	"cpu":         monitor.LoadCPU,
	"connections": monitor.LoadInflight,
	"rate":        monitor.LoadRate,
}

func newAgentHTTPCmd() *cobra.Command {
	var f agentHTTPFlags
	cmd := &cobra.Command{
		Use:   "http --target URL --register ADMIN_URL --group NAME [--stub-status URL] [--pid PID...] [--cgroup NAME]",
		Short: "Side-car monitor for an unmodified HTTP replica (NGINX and the like)",
		Long: `Run beside an HTTP replica that has no fulcrum monitor built in, e.g. NGINX
serving static objects. The agent waits until --target answers, registers
the replica (--address, default --target) with the balancer's group, reads
its load and reports it every report interval (--mode push), or answers
the balancer's pulls on --listen (--mode pull). It deregisters the replica
on SIGTERM or SIGINT.

What it reads:
  --stub-status URL   NGINX's stub_status page: request rate (rps), requests
                      in progress (inflight) and, by Little's law, the mean
                      latency (latency_ms)
  --pid PID           CPU time of these processes and their children
  --cgroup NAME       CPU time of a cgroup (path below /sys/fs/cgroup, or an
                      absolute directory); its quota is the capacity
cpu (and utilization, which weighted-round-robin-orca reads) is the share of
--cpus cores used (default: the cgroup's quota, else every core): of the
processes with --pid, else of the cgroup. With both, the cgroup's CPU time
beyond the processes' is reported as cpu_other (other work under the
replica's quota, which ett takes out of the replica's capacity).

--load picks what is reported as the load: rate (requests/s), connections
(requests in progress) or cpu (share 0–1). Default rate with --stub-status,
else cpu.

With --listen the agent serves GET /fulcrum/probe (prequal's load probe:
requests in progress and latency), the pulls (/fulcrum/report) and /healthz.
The balancer probes the replica's address, so have NGINX pass /fulcrum/probe
to the agent (see docs/agents.md). Its first line on stdout is
"listening on <URL>" when it listens.`,
		Example: `  fulcrum agent http --target http://10.0.0.2:80 --register http://10.0.0.1:7070 \
      --group web --stub-status http://10.0.0.2:80/nginx_status --pid $(cat /run/nginx.pid)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return usageErr(cmd, "%v", err)
			}
			return runAgentHTTP(cmd.Context(), f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "", "base URL the agent reaches the replica at (required)")
	f.adminTLS.register(fl)
	fl.StringVar(&f.address, "address", "", "public base URL to register the replica with (default --target)")
	fl.StringVar(&f.register, "register", "", registerUsage)
	fl.StringVar(&f.group, "group", "", "group to join (with --register)")
	fl.StringVar(&f.token, "token", "", "replica token from an earlier registration (fulcrum ctl add) instead of registering")
	fl.StringVar(&f.joinToken, "join-token", os.Getenv("FULCRUM_JOIN_TOKEN"), "join or admin token to register with (env FULCRUM_JOIN_TOKEN)")
	addRetryForever(cmd, &f.retryForever)
	fl.Float64Var(&f.weight, "weight", 0, "relative capacity (default 1)")
	fl.StringVar(&f.stubStatus, "stub-status", "", "URL of NGINX's stub_status page")
	fl.IntSliceVar(&f.pids, "pid", nil, "process whose CPU time (with its children's) is the replica's; repeatable")
	fl.StringVar(&f.cgroup, "cgroup", "", "cgroup whose CPU time is the replica's")
	fl.Float64Var(&f.cpus, "cpus", 0, "cores the replica may use (default: the cgroup's quota, else every core)")
	fl.StringVar(&f.load, "load", "", "what to report as load: rate, connections or cpu (default rate with --stub-status, else cpu)")
	fl.StringVar(&f.mode, "mode", protocol.MonitorPush, "report mode: push or pull")
	fl.StringVar(&f.listen, "listen", "", "address to serve load probes, pulls and /healthz on (required with --mode pull)")
	fl.StringVar(&f.advertise, "advertise", "", "base URL the balancer reaches --listen at (default http://<listen address>)")
	fl.DurationVar(&f.sample, "sample", httpagent.DefaultSample, "how often to read stub_status and the CPU time")
	fl.DurationVar(&f.wait, "wait", 30*time.Second, "how long to wait for --target to answer before giving up")
	return cmd
}

// check validates the flags before anything starts.
func (f *agentHTTPFlags) check() error {
	if f.target == "" {
		return errors.New("--target is required: the replica's base URL")
	}
	if err := absoluteHTTP(f.target); err != nil {
		return fmt.Errorf("--target %q: %v", f.target, err)
	}
	if f.address == "" {
		f.address = f.target
	}
	if err := absoluteHTTP(f.address); err != nil {
		return fmt.Errorf("--address %q: %v", f.address, err)
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
	if f.stubStatus != "" {
		if err := absoluteHTTP(f.stubStatus); err != nil {
			return fmt.Errorf("--stub-status %q: %v", f.stubStatus, err)
		}
	}
	for _, p := range f.pids {
		if p <= 0 {
			return fmt.Errorf("--pid %d: must be a process id > 0", p)
		}
	}
	if f.load == "" {
		f.load = "cpu"
		if f.stubStatus != "" {
			f.load = "rate"
		}
	}
	switch f.load {
	case "rate", "connections":
		if f.stubStatus == "" {
			return fmt.Errorf("--load %s needs --stub-status", f.load)
		}
	case "cpu":
		if len(f.pids) == 0 && f.cgroup == "" {
			return errors.New("--load cpu needs --pid or --cgroup")
		}
	default:
		return fmt.Errorf("--load %q: must be rate, connections or cpu", f.load)
	}
	return checkMeasureFlags(f.cpus, f.mode, f.listen, f.advertise, f.sample, f.wait)
}

// checkMeasureFlags checks the flags the CPU-measuring agents (http, tcp)
// share: --cpus, --mode with --listen, --advertise, --sample and --wait.
func checkMeasureFlags(cpus float64, mode, listen, advertise string, sample, wait time.Duration) error {
	if cpus < 0 || cpus != cpus {
		return fmt.Errorf("--cpus %v: must be a number of cores > 0", cpus)
	}
	switch mode {
	case protocol.MonitorPush:
	case protocol.MonitorPull:
		if listen == "" {
			return errors.New("--mode pull needs --listen: the balancer pulls reports from the agent")
		}
	default:
		return fmt.Errorf("--mode %q: must be push or pull", mode)
	}
	if advertise != "" {
		if listen == "" {
			return errors.New("--advertise needs --listen")
		}
		if err := absoluteHTTP(advertise); err != nil {
			return fmt.Errorf("--advertise %q: %v", advertise, err)
		}
	}
	if sample < time.Millisecond || sample > time.Minute {
		return fmt.Errorf("--sample %s: must be in [1ms, 1m]", sample)
	}
	if wait <= 0 {
		return fmt.Errorf("--wait %s: must be > 0", wait)
	}
	return nil
}

func absoluteHTTP(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	return nil
}

func runAgentHTTP(ctx context.Context, f agentHTTPFlags, stdout io.Writer) error {
	ctx, log, adminHC, err := agentStart(ctx, &f.adminTLS)
	if err != nil {
		return err
	}
	cfg := httpagent.Config{StubStatus: f.stubStatus, Cores: f.cpus, Sample: f.sample, Logger: log}
	if f.cgroup != "" {
		src, cores, err := httpagent.ResolveCgroup("", f.cgroup)
		if err != nil {
			return exitCode(2, fmt.Errorf("--cgroup: %w", err))
		}
		cfg.CPU = src
		if cfg.Cores == 0 {
			cfg.Cores = cores
		}
	}
	if len(f.pids) > 0 {
		// The processes are the replica; a cgroup beside them is the
		// pool they share its quota in.
		if cfg.CPU != nil {
			cfg.Pool = cfg.CPU
		}
		cfg.CPU = httpagent.ProcCPU{Pids: f.pids}
	}
	agent, err := httpagent.New(cfg)
	if err != nil {
		return exitCode(2, err)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	if err := httpagent.WaitReachable(ctx, hc, f.target, f.wait); err != nil {
		return err
	}
	readyCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = agent.Ready(readyCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("cannot measure the replica: %w", err)
	}

	var ln net.Listener
	var listenURL string
	if f.listen != "" {
		if ln, err = net.Listen("tcp", f.listen); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		listenURL = agentURL(f.advertise, ln)
	}
	opts := monitor.Options{
		Admins: checkedRegisterURLs(f.register), Group: f.group, Address: f.address, Token: f.token, JoinToken: f.joinToken,
		Weight: f.weight, Mode: f.mode, Load: agentLoads[f.load], Logger: log,
		RegisterAttempts: registerAttempts(f.retryForever),
	}
	opts.HTTPClient = adminHC
	if f.mode == protocol.MonitorPull {
		opts.PullURL = listenURL + monitor.DefaultPullPath
	}
	mon, err := monitor.NewExternal(opts, agent.Metrics)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return exitCode(2, err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go agent.Run(runCtx)

	stop := catchStop()
	defer stop.release()
	serveErr := make(chan error, 1)
	var srv *http.Server
	if ln != nil {
		var pull http.Handler
		if f.mode == protocol.MonitorPull {
			pull = mon.PullHandler()
		}
		srv = &http.Server{Handler: agent.Handler(monitor.DefaultPullPath, pull), ReadHeaderTimeout: 10 * time.Second}
		go func() { serveErr <- srv.Serve(ln) }()
		fmt.Fprintf(stdout, "listening on %s\n", listenURL)
	}
	if err := mon.Start(); err != nil {
		return err
	}
	log.Info("agent measuring the replica", "target", f.target, "address", f.address, "load", f.load, "mode", f.mode)
	waitCtx, stopWait := untilMonitorFails(ctx, mon)
	defer stopWait()
	_, runErr := stop.await(waitCtx, serveErr)
	runErr = monitorErr(runErr, mon)
	stopRun()
	return agentLeave(log, mon, srv, runErr)
}
