package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent"
	"github.com/fulcrum-lb/fulcrum/internal/agent/tcpagent"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func init() { agentSubcommands = append(agentSubcommands, newAgentTCPCmd) }

type agentTCPFlags struct {
	adminTLS                                           adminTLSFlags
	target, address, register, group, token, joinToken string
	cgroup, load, mode, listen, advertise              string
	pid                                                int
	cpus, weight                                       float64
	sample, wait                                       time.Duration
	retryForever                                       bool
}

// agentTCPLoads maps the tcp agent's --load to the monitor's load sources.
var agentTCPLoads = map[string]monitor.LoadSource{
	"cpu":         monitor.LoadCPU,
	"connections": monitor.LoadInflight,
}

func newAgentTCPCmd() *cobra.Command {
	var f agentTCPFlags
	cmd := &cobra.Command{
		Use:   "tcp --target HOST:PORT (--pid PID | --cgroup DIR) --register ADMIN_URL --group NAME",
		Short: "Side-car monitor for an unmodified TCP replica: its CPU and connections",
		Long: `Run beside a TCP replica that has no fulcrum monitor built in. The agent
waits until --target accepts a connection, registers the replica (--address,
default --target, as HOST:PORT) with the balancer's tcp group, reads its
load and reports it every report interval of the group (--mode push), or
answers the balancer's pulls on --listen (--mode pull). It deregisters the
replica on SIGTERM or SIGINT.

What it reads:
  --pid PID        CPU time of this process and its children; its
                   connections in its network namespace (/proc/PID/net)
  --cgroup DIR     CPU time of a cgroup (path below /sys/fs/cgroup, or an
                   absolute directory); its quota is the capacity. Without
                   --pid, connections are counted in the namespace of the
                   cgroup's first process.
cpu (and utilization) is the share of --cpus cores used (default: the
cgroup's quota, else every core). With both, the cgroup's CPU time beyond
the process's is reported as cpu_other. inflight is the replica's client
connections: the ESTABLISHED TCP connections whose local port is the
--target's (and local address its host, when that is an IP address), from
/proc/net/tcp and /proc/net/tcp6 of its namespace.

--load picks what is reported as the load: cpu (share 0–1, the default) or
connections (inflight).

With --listen the agent serves the pulls (/fulcrum/report) and /healthz;
its first line on stdout is then "listening on <URL>".`,
		Example: `  fulcrum agent tcp --target 10.0.0.2:5432 --pid $(cat /run/postgres.pid) \
      --register http://10.0.0.1:7070 --group db
  fulcrum agent tcp --target 10.0.0.3:6379 --cgroup system.slice/redis.service \
      --register http://10.0.0.1:7070 --group cache --load connections`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return usageErr(cmd, "%v", err)
			}
			return runAgentTCP(cmd.Context(), f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "", "HOST:PORT the replica accepts connections on (required)")
	f.adminTLS.register(fl)
	fl.StringVar(&f.address, "address", "", "HOST:PORT to register the replica with (default --target)")
	fl.StringVar(&f.register, "register", "", registerUsage)
	fl.StringVar(&f.group, "group", "", "tcp group to join (with --register)")
	fl.StringVar(&f.token, "token", "", "replica token from an earlier registration (fulcrum ctl add) instead of registering")
	fl.StringVar(&f.joinToken, "join-token", os.Getenv("FULCRUM_JOIN_TOKEN"), "join or admin token to register with (env FULCRUM_JOIN_TOKEN)")
	addRetryForever(cmd, &f.retryForever)
	fl.Float64Var(&f.weight, "weight", 0, "relative capacity (default 1)")
	fl.IntVar(&f.pid, "pid", 0, "the replica's process: its CPU time (with its children's) and its network namespace")
	fl.StringVar(&f.cgroup, "cgroup", "", "cgroup whose CPU time is the replica's (with --pid: the pool it shares)")
	fl.Float64Var(&f.cpus, "cpus", 0, "cores the replica may use (default: the cgroup's quota, else every core)")
	fl.StringVar(&f.load, "load", "cpu", "what to report as load: cpu or connections")
	fl.StringVar(&f.mode, "mode", protocol.MonitorPush, "report mode: push or pull")
	fl.StringVar(&f.listen, "listen", "", "address to serve pulls and /healthz on (required with --mode pull)")
	fl.StringVar(&f.advertise, "advertise", "", "base URL the balancer reaches --listen at (default http://<listen address>)")
	fl.DurationVar(&f.sample, "sample", httpagent.DefaultSample, "how often to read the CPU time")
	fl.DurationVar(&f.wait, "wait", 30*time.Second, "how long to wait for --target to accept a connection before giving up")
	return cmd
}

// check validates the flags before anything starts.
func (f *agentTCPFlags) check() error {
	if f.target == "" {
		return errors.New("--target is required: the HOST:PORT the replica accepts connections on")
	}
	if err := hostPort(f.target); err != nil {
		return fmt.Errorf("--target %q: %v", f.target, err)
	}
	if f.address == "" {
		f.address = f.target
	}
	if err := hostPort(f.address); err != nil {
		return fmt.Errorf("--address %q: %v", f.address, err)
	}
	if f.pid == 0 && f.cgroup == "" {
		return errors.New("--pid PID or --cgroup DIR is required: the replica's CPU time and network namespace")
	}
	if f.pid < 0 {
		return fmt.Errorf("--pid %d: must be a process id > 0", f.pid)
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
	if _, ok := agentTCPLoads[f.load]; !ok {
		return fmt.Errorf("--load %q: must be cpu or connections", f.load)
	}
	return checkMeasureFlags(f.cpus, f.mode, f.listen, f.advertise, f.sample, f.wait)
}

// hostPort accepts HOST:PORT with a host and a port in [1, 65535].
func hostPort(s string) error {
	h, p, err := net.SplitHostPort(s)
	if err != nil || h == "" {
		return errors.New("must be HOST:PORT")
	}
	if port, err := strconv.ParseUint(p, 10, 16); err != nil || port == 0 {
		return errors.New("must be HOST:PORT with a port in [1, 65535]")
	}
	return nil
}

func runAgentTCP(ctx context.Context, f agentTCPFlags, stdout io.Writer) error {
	ctx, log, adminHC, err := agentStart(ctx, &f.adminTLS)
	if err != nil {
		return err
	}
	cfg := tcpagent.Config{Target: f.target, Cores: f.cpus, Sample: f.sample, Logger: log}
	if f.cgroup != "" {
		src, cores, err := httpagent.ResolveCgroup("", f.cgroup)
		if err != nil {
			return exitCode(2, fmt.Errorf("--cgroup: %w", err))
		}
		cfg.CPU, cfg.Net = src, tcpagent.CgroupNet("", filepath.Dir(src.File))
		if cfg.Cores == 0 {
			cfg.Cores = cores
		}
	}
	if f.pid != 0 {
		// The process is the replica; a cgroup beside it is the pool it
		// shares its quota in.
		cfg.Pool = cfg.CPU
		cfg.CPU, cfg.Net = httpagent.ProcCPU{Pids: []int{f.pid}}, tcpagent.PidNet("", f.pid)
	}
	agent, err := tcpagent.New(cfg)
	if err != nil {
		return exitCode(2, err)
	}
	if err := tcpagent.WaitListening(ctx, f.target, f.wait); err != nil {
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
		Admins: checkedRegisterURLs(f.register), Group: f.group, Address: f.address, TCP: true, Token: f.token, JoinToken: f.joinToken,
		Weight: f.weight, Mode: f.mode, Load: agentTCPLoads[f.load], Logger: log,
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
		mux := http.NewServeMux()
		if f.mode == protocol.MonitorPull {
			mux.Handle(monitor.DefaultPullPath, mon.PullHandler())
		}
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
