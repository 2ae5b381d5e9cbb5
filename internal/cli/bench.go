package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	// The experiments register themselves with the bench.
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/albl"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/cluster"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/effectiveness"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/eft"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/overhead"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/python"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/remoting"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/replication"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/scalability"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/tcp"
)

func init() { subcommands = append(subcommands, newBenchCmd, newBenchClientCmd) }

// benchFlags are the flags every experiment takes.
type benchFlags struct {
	out, protocol, orb, haproxy, nginx string
	quick, smoke, profile              bool
}

func newBenchCmd() *cobra.Command {
	f := &benchFlags{}
	var list strings.Builder
	for _, name := range bench.Names() {
		exp, _ := bench.New(name)
		fmt.Fprintf(&list, "  %-14s %s\n", name, exp.Summary())
	}
	all := "every experiment above on loopback"
	if names := byNameOnlyNames(); len(names) > 0 {
		all += " but " + strings.Join(names, ", ")
	}
	fmt.Fprintf(&list, "  %-14s %s (with --testbed, the testbed ones too), each into its own subdirectory of --out\n", "all", all)
	cmd := &cobra.Command{
		Use:   "bench EXPERIMENT",
		Short: "Run the experiments of the papers fulcrum is built on, side by side with HAProxy and NGINX",
		Long: `Run one of the experiments of the papers fulcrum is built on with real
processes on loopback — fulcrum balancers, prime replicas, HAProxy and NGINX —
and write results.json, CSV files, PNG plots and report.md (with its targets
marked met or missed) into --out (default ./bench-results/<experiment>-<time>).

Experiments:
` + list.String() + `
The papers:
  Othman, O'Ryan, Schmidt, "The Design and Performance of an Adaptive CORBA
    Load Balancing Service" (2001): overhead, effectiveness
  Beekhuis, "Comparative Performance Evaluation of CORBA and DCOM" (1998):
    scalability
  Kontogiannis, Valsamidis, Efraimidis, Karakos, "An adaptive load balancing
    algorithm for cluster-based web systems" (ALBL): albl
  Chen, Chang, Chen, Chen, Yang, Lee, "Efficient Switching Supports of
    Distributed .NET Remoting with Network Processors": remoting, eft
  Paulos, Narasimhan, "End-to-End Consistency of Multi-Tier Operations Across
    Mixed Replicated and Unreplicated Components" (MEAD, 2006): replication

The default size is the paper's; --quick is the shortest run whose figures
still mean something; --smoke only proves that every configuration runs.
HAProxy and NGINX come from Debian's packages (apt-get install haproxy
nginx); when one is missing its rows are marked skipped.

Exit status: 0 when the experiment ran (targets are reported, not
enforced), 1 when it could not run, 2 on a usage error.`,
		Example: `  fulcrum bench overhead --quick
  fulcrum bench scalability --smoke --out /tmp/scal
  fulcrum bench all --quick`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr(cmd, "unknown experiment %q; experiments: %s, all", args[0], strings.Join(bench.Names(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(c, "%v", err) })
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.out, "out", "", "output directory (default ./bench-results/<experiment>-<time>)")
	pf.BoolVar(&f.quick, "quick", false, "the shortest run whose figures still mean something")
	pf.BoolVar(&f.smoke, "smoke", false, "only prove that every configuration runs and writes valid output (seconds)")
	pf.StringVar(&f.protocol, "protocol", bench.ProtocolHTTP, "protocol of the replicas and balancers: http, or giop (overhead and effectiveness)")
	pf.StringVar(&f.orb, "orb", bench.ORBGo, "with --protocol giop, the replicas' and clients' ORB: go (fulcrum's), or omniorb (omniORB C++ servers behind side-car agents, omniORB C++ client processes; needs the Debian packages omniidl, libomniorb4-dev, g++)")
	pf.StringVar(&f.haproxy, "haproxy", "", "HAProxy executable (default: haproxy in PATH or /usr/sbin)")
	pf.StringVar(&f.nginx, "nginx", "", "NGINX executable (default: nginx in PATH or /usr/sbin)")
	pf.BoolVar(&f.profile, "profile", false, "have every fulcrum balancer write a CPU profile to logs/<name>.cpu.pprof (go tool pprof)")
	for _, name := range bench.Names() {
		cmd.AddCommand(benchExperimentCmd(f, name))
	}
	cmd.AddCommand(benchExperimentCmd(f, "all"))
	return cmd
}

// benchExperimentCmd is "fulcrum bench NAME", NAME an experiment or all.
func benchExperimentCmd(f *benchFlags, name string) *cobra.Command {
	var exps []bench.Experiment
	var testbed bool // "all --testbed"
	if name != "all" {
		exp, _ := bench.New(name)
		exps = append(exps, exp)
	}
	short := "Every experiment on loopback (--testbed: and the testbed ones), each into its own subdirectory of --out"
	if name != "all" {
		short = exps[0].Summary()
	}
	cmd := &cobra.Command{
		Use:   name,
		Short: short,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.quick && f.smoke {
				return usageErr(cmd, "--quick and --smoke exclude each other")
			}
			if name == "all" {
				exps = exps[:0]
				for _, n := range bench.AllNames(testbed) {
					exp, _ := bench.New(n)
					exps = append(exps, exp)
				}
			}
			o := bench.Options{
				Out: f.out, Protocol: f.protocol, ORB: f.orb, HAProxy: f.haproxy, NGINX: f.nginx, Profile: f.profile,
				Command: typedCommand(cmd), Progress: cmd.ErrOrStderr(),
			}
			switch {
			case f.quick:
				o.Size = bench.Quick
			case f.smoke:
				o.Size = bench.Smoke
			}
			switch o.Protocol {
			case bench.ProtocolHTTP:
			case bench.ProtocolGIOP:
				for _, exp := range exps {
					if !bench.RunsOverGIOP(exp.Name()) {
						return usageErr(cmd, "--protocol %q: experiment %s runs over %q only; over GIOP: %s", o.Protocol, exp.Name(), bench.ProtocolHTTP, strings.Join(bench.GIOPNames(), ", "))
					}
				}
			default:
				return usageErr(cmd, "--protocol %q: must be %q or %q", o.Protocol, bench.ProtocolHTTP, bench.ProtocolGIOP)
			}
			switch o.ORB {
			case bench.ORBGo:
			case bench.ORBOmniORB:
				if o.Protocol != bench.ProtocolGIOP {
					return usageErr(cmd, "--orb %q: needs --protocol %q", o.ORB, bench.ProtocolGIOP)
				}
			default:
				return usageErr(cmd, "--orb %q: must be %q or %q", o.ORB, bench.ORBGo, bench.ORBOmniORB)
			}
			for _, exp := range exps {
				if c, ok := exp.(bench.Checker); ok {
					if err := c.Check(o.Size); err != nil {
						return usageErr(cmd, "%v", err)
					}
				}
			}
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			outs, err := bench.Run(ctx, exps, o)
			w := cmd.OutOrStdout()
			for _, out := range outs {
				if out.Err == nil {
					fmt.Fprintf(w, "%s: %s\n", out.Name, out.Dir)
					for _, t := range out.Results.Report.Targets() {
						fmt.Fprintf(w, "  %-7s %s (%s)\n", t.Status, t.Name, t.Detail)
					}
				}
			}
			if err != nil {
				return exitCode(1, err)
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(c, "%v", err) })
	if name != "all" {
		if fa, ok := exps[0].(bench.FlagAdder); ok {
			fa.AddFlags(cmd.Flags())
		}
	} else {
		cmd.Flags().BoolVar(&testbed, "testbed", false,
			"also run the testbed experiments ("+strings.Join(testbedNames(), ", ")+"): they need root and add about 17 minutes with --quick, about 5 hours at full size")
	}
	return cmd
}

// testbedNames lists the experiments "bench all" runs only with --testbed.
func testbedNames() []string {
	var out []string
	all := bench.AllNames(false)
	for _, n := range bench.Names() {
		if !slices.Contains(all, n) {
			out = append(out, n)
		}
	}
	return out
}

// byNameOnlyNames lists the experiments "bench all" leaves out even with
// --testbed: they run when named (bench.ByNameOnly).
func byNameOnlyNames() []string {
	var out []string
	all := bench.AllNames(true)
	for _, n := range bench.Names() {
		if !slices.Contains(all, n) {
			out = append(out, n)
		}
	}
	return out
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// typedCommand is the command line as typed, e.g. "fulcrum bench overhead
// --quick": the arguments Main was given or, when the command did not come
// through Main, the command's path and the flags set.
func typedCommand(cmd *cobra.Command) string {
	if len(typedArgs) > 0 {
		parts := []string{cmd.Root().Name()}
		for _, a := range typedArgs {
			parts = append(parts, shellQuote(a))
		}
		return strings.Join(parts, " ")
	}
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Value.Type() == "bool" {
			if fl.Value.String() == "true" {
				parts = append(parts, "--"+fl.Name)
			} else {
				parts = append(parts, "--"+fl.Name+"=false")
			}
			return
		}
		v := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		parts = append(parts, "--"+fl.Name, shellQuote(v))
	})
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./,:=+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// newBenchClientCmd is the hidden client process of the scalability
// experiment's load grid.
func newBenchClientCmd() *cobra.Command {
	var (
		s        bench.ClientSpec
		start    string
		bodySize int
	)
	cmd := &cobra.Command{
		Use:    bench.ClientCommand + " --url URL --callers N --start TIME --duration D",
		Short:  "Run one client process of a bench (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := time.Parse(time.RFC3339Nano, start)
			if err != nil {
				return exitCode(2, fmt.Errorf("--start: %w", err))
			}
			s.Start, s.BodySize = t, bodySize
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return bench.RunClient(ctx, s, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&s.Endpoint.URL, "url", "", "URL to call")
	fl.StringVar(&s.Endpoint.Method, "method", "", "HTTP method (default GET)")
	fl.IntVar(&bodySize, "body-size", 0, "request body size in bytes")
	fl.BoolVar(&s.Endpoint.Binding, "binding", false, "call through fulcrum's client library (binding protocol)")
	fl.IntVar(&s.Callers, "callers", 1, "concurrent closed-loop callers")
	fl.StringVar(&start, "start", "", "synchronised start, RFC 3339 with nanoseconds")
	fl.DurationVar(&s.Duration, "duration", 0, "how long to call from the start")
	return cmd
}
