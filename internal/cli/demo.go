package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/demo"
)

func init() { subcommands = append(subcommands, newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var (
		o     demo.Options
		rates string
		logs  bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the effectiveness experiment on loopback: a balancer, prime replicas and clients, until loads balance",
		Long: `Run the effectiveness experiment of Othman, O'Ryan and Schmidt, "The Design
and Performance of an Adaptive CORBA Load Balancing Service" (2001, §4.3) on
this machine with nothing set up: a balancer, 4 prime replicas (child
processes, whose pids and addresses are printed at start) and 8 clients, 4 at
100 calls/s and 4 at 50 calls/s, started one after another, in an on-demand
group balanced by least-loaded.

It prints the URL of the balancer's dashboard (/ui/ on its admin API, see
docs/dashboard.md): open it to watch the clients move and the loads converge;
with --stay the demo keeps running after its result until interrupted, so
the dashboard stays live.
Every second it prints the calls/s each replica served. It exits 0 once every
replica has stayed within ±10% of the mean for 10 s ("balanced after N s",
N being when that window began) and 1 if that has not happened within 120 s.
If no assignment of the clients can meet ±10%, it says so at start and uses
the best reachable spread plus two points.

Kill a replica with kill -9 while it runs: its clients rebind through the
front door, and the demo starts it again on the same address, where it
re-registers and takes load.

With a non-adaptive set-up, e.g. --strategy round-robin --binding
per-session, it shows the lasting imbalance of the paper's Fig. 15 instead, runs
for --duration (default 60s) and exits 0.

With --protocol giop the same experiment runs over CORBA GIOP, as in the paper:
the replicas serve the Prime interface (fulcrum backend prime --giop), and each
client calls the group's corbaloc:iiop: reference with fulcrum's client ORB,
is forwarded to a replica with LOCATION_FORWARD and calls it directly until a
high advisory forwards it back to the front door.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Replicas < 1 || o.Replicas > 64 {
				return exitCode(2, fmt.Errorf("--replicas: invalid value %d, must be in [1,64]", o.Replicas))
			}
			if o.Rates, err = parseRates(rates); err != nil {
				return exitCode(2, err)
			}
			if o.Protocol != "http" && o.Protocol != "giop" {
				return exitCode(2, fmt.Errorf("--protocol: invalid value %q, must be http or giop", o.Protocol))
			}
			o.Out = cmd.OutOrStdout()
			if logs {
				o.Log = cmd.ErrOrStderr()
			}
			ctx := cmd.Context()
			if o.Stay {
				var stop context.CancelFunc
				ctx, stop = signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
				defer stop()
			}
			err = demo.Run(ctx, o)
			if errors.Is(err, demo.ErrNotBalanced) {
				return exitCode(1, err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Replicas, "replicas", 4, "number of prime replicas")
	fl.StringVar(&rates, "rates", "100,100,100,100,50,50,50,50", "clients' call rates in calls/s, comma-separated, started in this order")
	fl.StringVar(&o.Strategy, "strategy", "least-loaded", "strategy of the group")
	fl.StringVar(&o.Binding, "binding", "on-demand", "binding mode: on-demand, per-session or per-request")
	fl.StringVar(&o.Protocol, "protocol", "http", "protocol of the group: http, or giop (Go Prime servants over GIOP, clients with fulcrum's client ORB)")
	fl.DurationVar(&o.Duration, "duration", 0, "deadline for equilibrium (on-demand, default 120s) or run time (otherwise, default 60s)")
	fl.BoolVar(&logs, "logs", false, "show the balancer's and replicas' logs on stderr")
	fl.BoolVar(&o.Stay, "stay", false, "keep running after the result, until interrupted (Ctrl-C), so that the dashboard stays live; the exit status is the result's")
	return cmd
}

func parseRates(s string) ([]float64, error) {
	var out []float64
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0 && v <= 10000) {
			return nil, fmt.Errorf("--rates: invalid value %q at position %d, each rate must be a number in (0, 10000] calls/s", f, i+1)
		}
		out = append(out, v)
	}
	return out, nil
}
