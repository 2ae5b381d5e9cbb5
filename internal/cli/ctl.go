package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/ctl"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func init() { subcommands = append(subcommands, newCtlCmd) }

// ctlOptions are the flags every ctl subcommand shares.
type ctlOptions struct {
	admin string
	token string
	json  bool
	tls   adminTLSFlags
}

// outputFlag adds -o/--output to a command that prints replica tables:
// "wide" prints long replica addresses (GIOP IORs) whole. wide reports
// the choice, or a usage error naming the value and what is allowed.
func outputFlag(cmd *cobra.Command) (wide func() (bool, error)) {
	var output string
	cmd.Flags().StringVarP(&output, "output", "o", "", `"wide" prints long replica addresses (GIOP IORs) whole instead of shortened`)
	return func() (bool, error) {
		switch output {
		case "":
			return false, nil
		case "wide":
			return true, nil
		}
		return false, usageErr(cmd, "-o %q: the only output format is wide (or --json)", output)
	}
}

// client returns the admin API client the flags (or FULCRUM_ADMIN and
// FULCRUM_TOKEN) point at.
func (o *ctlOptions) client(cmd *cobra.Command) (*ctl.Client, error) {
	admin, token := o.admin, o.token
	if !cmd.Flags().Changed("admin") {
		if env := os.Getenv("FULCRUM_ADMIN"); env != "" {
			admin = env
		}
	}
	if !cmd.Flags().Changed("token") {
		token = os.Getenv("FULCRUM_TOKEN")
	}
	c, err := ctl.New(admin, token)
	if err != nil {
		return nil, exitCode(2, err)
	}
	tr, err := o.tls.transport()
	if err != nil {
		return nil, exitCode(2, err)
	}
	if tr != nil {
		c.HTTP.Transport = tr
	}
	return c, nil
}

// apiErr marks an error from the API (or reaching it) for exit status 1.
func apiErr(err error) error {
	if err == nil {
		return nil
	}
	return exitCode(1, err)
}

// usageErr marks a usage error for exit status 2.
func usageErr(cmd *cobra.Command, format string, args ...any) error {
	return exitCode(2, fmt.Errorf("%s (see \"%s --help\")", fmt.Sprintf(format, args...), cmd.CommandPath()))
}

// exactArgs checks the positional arguments, naming them in the error.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErr(cmd, "%s takes %d argument(s), %s; got %d", cmd.Name(), len(names), strings.Join(names, " "), len(args))
		}
		for i, a := range args {
			if a == "" {
				return usageErr(cmd, "%s must not be empty", names[i])
			}
		}
		return nil
	}
}

// printJSON writes an API answer indented.
func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		_, err = w.Write(raw)
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

func newCtlCmd() *cobra.Command {
	o := &ctlOptions{}
	cmd := &cobra.Command{
		Use:   "ctl COMMAND",
		Short: "Administer a running balancer through its admin API",
		Long: `Administer a running balancer through its admin API: list and show groups,
create, change and delete them, and add, drain, activate and remove replicas
(remove --block keeps a replica's address out until unblock).

The admin API is at --admin (or $FULCRUM_ADMIN; default ` + ctl.DefaultAdmin + `).
When the balancer has an admin_token, pass it with --token (or $FULCRUM_TOKEN).
Exit status: 0 on success, 1 when the API refuses (its message and the field
at fault are printed) or cannot be reached, 2 on a usage error.`,
		Example: `  fulcrum ctl groups
  fulcrum ctl create prime --front-door 127.0.0.1:8000 --strategy least-loaded --param tolerance=1.1
  fulcrum ctl add prime http://127.0.0.1:9001
  fulcrum ctl show prime
  fulcrum ctl set prime --strategy round-robin
  fulcrum ctl drain prime r-0a1b2c3d4e`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr(cmd, "unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(c, "%v", err) })
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.admin, "admin", ctl.DefaultAdmin, "admin API base URL (env FULCRUM_ADMIN)")
	pf.StringVar(&o.token, "token", "", "admin token, sent as a bearer token (env FULCRUM_TOKEN)")
	o.tls.register(pf)
	pf.BoolVar(&o.json, "json", false, "print the API's JSON answer instead of a table")
	cmd.AddCommand(
		ctlGroupsCmd(o), ctlShowCmd(o), ctlStatusCmd(o),
		ctlCreateCmd(o), ctlApplyCmd(o), ctlDeleteCmd(o), ctlSetCmd(o),
		ctlAddCmd(o), ctlReplicaCmd(o, "drain"), ctlReplicaCmd(o, "activate"), ctlReplicaCmd(o, "remove"),
		ctlUnblockCmd(o),
	)
	for _, mk := range ctlExtraCmds {
		cmd.AddCommand(mk(o))
	}
	return cmd
}

// ctlExtraCmds are ctl subcommands that add themselves from their own
// files.
var ctlExtraCmds []func(*ctlOptions) *cobra.Command

func ctlGroupsCmd(o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "groups",
		Aliases: []string{"list"},
		Short:   "List the groups",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			groups, raw, err := c.Groups(cmd.Context())
			if err != nil {
				return apiErr(err)
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			return ctl.PrintGroups(cmd.OutOrStdout(), groups)
		},
	}
}

func ctlShowCmd(o *ctlOptions) *cobra.Command {
	var wide func() (bool, error)
	cmd := &cobra.Command{
		Use:   "show GROUP [-o wide]",
		Short: "Show a group's settings and replicas: loads, advisories, counters",
		Long: `Show a group's settings and a table of its replicas: loads, advisories,
counters. Replica addresses longer than 48 characters (GIOP IORs) are
shortened to their first and last characters; -o wide prints them whole.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := wide()
			if err != nil {
				return err
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			st, raw, err := c.Group(cmd.Context(), args[0])
			if err != nil {
				return apiErr(err)
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			return ctl.PrintStatus(cmd.OutOrStdout(), st, w)
		},
	}
	wide = outputFlag(cmd)
	return cmd
}

func ctlStatusCmd(o *ctlOptions) *cobra.Command {
	var wide func() (bool, error)
	cmd := &cobra.Command{
		Use:   "status [-o wide]",
		Short: "Show every group with its replicas",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := wide()
			if err != nil {
				return err
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			groups, raw, err := c.Groups(cmd.Context())
			if err != nil {
				return apiErr(err)
			}
			out := cmd.OutOrStdout()
			if o.json {
				return printJSON(out, raw)
			}
			if len(groups) == 0 {
				return ctl.PrintGroups(out, groups)
			}
			for i, g := range groups {
				if i > 0 {
					fmt.Fprintln(out)
				}
				if err := ctl.PrintStatus(out, g, w); err != nil {
					return err
				}
			}
			return nil
		},
	}
	wide = outputFlag(cmd)
	return cmd
}

// parseParams turns repeated --param k=v into a params map. A value that
// is JSON (a number, true, false, a quoted string, an object) is taken as
// such; anything else ("2s", "header:X-User") is a string.
func parseParams(cmd *cobra.Command, kvs []string) (map[string]any, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErr(cmd, "--param %q must be KEY=VALUE", kv)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v
		}
		out[k] = val
	}
	return out, nil
}

func ctlCreateCmd(o *ctlOptions) *cobra.Command {
	var (
		frontDoor, binding, strat, interval, advertise, joinToken string
		params                                                    []string
	)
	cmd := &cobra.Command{
		Use:   "create GROUP --front-door HOST:PORT",
		Short: "Create a group (fails if it exists; see apply to replace)",
		Long: `Create a group whose front door listens on --front-door. Unset settings take
their defaults (binding on-demand, strategy least-loaded with its default
params, report interval 500ms). For health checks, timeouts and static
replicas, write the group in a file and use "fulcrum ctl apply -f".`,
		Example: `  fulcrum ctl create prime --front-door 127.0.0.1:8000
  fulcrum ctl create api --front-door :8080 --binding per-request --strategy power-of-two
  fulcrum ctl create prime --front-door 127.0.0.1:8000 --param dampening=0.5 --param tolerance=1.05`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if frontDoor == "" {
				return usageErr(cmd, "--front-door HOST:PORT is required")
			}
			p, err := parseParams(cmd, params)
			if err != nil {
				return err
			}
			g := protocol.Group{Name: args[0], FrontDoor: frontDoor, Binding: binding, Strategy: strat, Params: p, Advertise: advertise, JoinToken: joinToken}
			if interval != "" {
				d, err := protocol.ParseDuration(interval)
				if err != nil {
					return usageErr(cmd, "--report-interval: %v", err)
				}
				g.ReportInterval = d
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			st, _, raw, err := c.PutGroup(cmd.Context(), args[0], g, true)
			if err != nil {
				return apiErr(err)
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "group %s created: front door %s, %s, strategy %s\n", st.Name, st.Advertise, st.Binding, st.Strategy)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&frontDoor, "front-door", "", "HOST:PORT the group's front door listens on (required; port 0 picks one)")
	f.StringVar(&binding, "binding", "", "per-session, on-demand (default) or per-request")
	f.StringVar(&strat, "strategy", "", "strategy name (default least-loaded)")
	f.StringArrayVar(&params, "param", nil, "strategy parameter KEY=VALUE (repeatable)")
	f.StringVar(&interval, "report-interval", "", "how often monitors report, a duration such as 500ms")
	f.StringVar(&advertise, "advertise", "", "front door URL clients and monitors use (default derived from --front-door)")
	f.StringVar(&joinToken, "join-token", "", "token that lets replicas register to this group without the admin token")
	return cmd
}

func ctlApplyCmd(o *ctlOptions) *cobra.Command {
	var (
		file    string
		ifMatch int64
	)
	cmd := &cobra.Command{
		Use:   "apply -f FILE [--if-match REV]",
		Short: "Create or replace groups from a YAML or JSON file",
		Long: `Create or replace the groups a file defines. The file holds one group with the
keys of a group in the config file (name, front_door, binding, strategy,
params, report_interval, health, timeouts, replicas, ...), a "groups:" list
of them, or several YAML documents. "-" reads standard input. Unknown keys
are rejected with their line. With --if-match REV (a file of one group) the
group is replaced only if it is still at revision REV. Prints each group's
new revision.`,
		Example: `  fulcrum ctl apply -f prime.yaml
  cat prime.json | fulcrum ctl apply -f -`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageErr(cmd, "-f FILE is required")
			}
			groups, err := ctl.ReadGroups(file, cmd.InOrStdin())
			if err != nil {
				return exitCode(2, err)
			}
			if err := checkIfMatch(cmd, ifMatch); err != nil {
				return err
			}
			if ifMatch != 0 && len(groups) != 1 {
				return usageErr(cmd, "--if-match is the revision of one group; the file defines %d", len(groups))
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var answers []json.RawMessage
			for _, g := range groups {
				st, created, raw, err := c.PutGroupIf(cmd.Context(), g.Name, g, ifMatch)
				if err != nil {
					return apiErr(fmt.Errorf("group %s: %w", g.Name, err))
				}
				if o.json {
					answers = append(answers, raw)
					continue
				}
				verb := "replaced"
				if created {
					verb = "created"
				}
				fmt.Fprintf(out, "group %s %s: front door %s, %s, strategy %s, revision %d\n", st.Name, verb, st.Advertise, st.Binding, st.Strategy, st.Revision)
				if st.Warning != "" {
					fmt.Fprintf(out, "  warning: %s\n", st.Warning)
				}
			}
			if o.json {
				data, err := json.Marshal(map[string]any{"groups": answers})
				if err != nil {
					return err
				}
				return printJSON(out, data)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "group file (YAML or JSON; - for standard input)")
	ifMatchFlag(cmd, &ifMatch)
	return cmd
}

func ctlDeleteCmd(o *ctlOptions) *cobra.Command {
	var ifMatch int64
	cmd := &cobra.Command{
		Use:   "delete GROUP [--if-match REV]",
		Short: "Delete a group: stop its front door and forget its replicas",
		Args:  exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkIfMatch(cmd, ifMatch); err != nil {
				return err
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			if err := c.DeleteGroupIf(cmd.Context(), args[0], ifMatch); err != nil {
				return apiErr(err)
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), []byte(fmt.Sprintf(`{"group":%q,"deleted":true}`, args[0])))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "group %s deleted\n", args[0])
			return nil
		},
	}
	ifMatchFlag(cmd, &ifMatch)
	return cmd
}

func ctlSetCmd(o *ctlOptions) *cobra.Command {
	var (
		strat, binding string
		params         []string
		maxInflight    int
		queue          protocol.Queue
		queueTimeout   time.Duration
		ifMatch        int64
	)
	cmd := &cobra.Command{
		Use:   "set GROUP [--strategy S] [--param KEY=VALUE ...] [--binding B] [--max-inflight N] [--queue-limit N ...] [--if-match REV]",
		Short: "Change a group's strategy, params, binding, in-flight limit or queue at run time",
		Long: `Change a group's strategy, strategy params, binding mode, max_inflight or
queue at run time, without a restart and without failing a call in flight.
Params are merged into the current ones; switching strategy resets params to
the new strategy's defaults, then applies the --param given. The queue flags
replace the whole queue (--queue-limit 0 turns it off). With --if-match REV
the change applies only if the group is still at revision REV (as "ctl show"
prints it); otherwise nothing changes and the current revision is printed.
Prints the group's new revision.`,
		Example: `  fulcrum ctl set prime --strategy round-robin
  fulcrum ctl set prime --param tolerance=1.2
  fulcrum ctl set prime --binding per-request
  fulcrum ctl set prime --max-inflight 2 --queue-limit 1000 --queue-order cost
  fulcrum ctl set prime --strategy round-robin --if-match 42`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parseParams(cmd, params)
			if err != nil {
				return err
			}
			var patch protocol.GroupPatch
			if cmd.Flags().Changed("strategy") {
				patch.Strategy = &strat
			}
			if cmd.Flags().Changed("binding") {
				patch.Binding = &binding
			}
			patch.Params = p
			if cmd.Flags().Changed("max-inflight") {
				patch.MaxInflight = &maxInflight
			}
			if f := cmd.Flags(); f.Changed("queue-limit") || f.Changed("queue-timeout") || f.Changed("queue-order") {
				if !f.Changed("queue-limit") {
					return usageErr(cmd, "--queue-timeout and --queue-order need --queue-limit (the queue is replaced whole)")
				}
				queue.Timeout = protocol.Duration(queueTimeout)
				patch.Queue = &queue
			}
			if patch.Strategy == nil && patch.Binding == nil && len(p) == 0 && patch.MaxInflight == nil && patch.Queue == nil {
				return usageErr(cmd, "nothing to set: give --strategy, --param, --binding, --max-inflight or --queue-limit")
			}
			if err := checkIfMatch(cmd, ifMatch); err != nil {
				return err
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			st, raw, err := c.PatchGroupIf(cmd.Context(), args[0], patch, ifMatch)
			if err != nil {
				return apiErr(err)
			}
			out := cmd.OutOrStdout()
			if o.json {
				return printJSON(out, raw)
			}
			fmt.Fprintf(out, "group %s: %s, strategy %s", st.Name, st.Binding, st.Strategy)
			if len(st.Params) > 0 {
				fmt.Fprintf(out, ", params %s", ctl.FormatParams(st.Params))
			}
			if st.MaxInflight > 0 {
				fmt.Fprintf(out, ", max_inflight %d", st.MaxInflight)
			}
			if q := st.Queue; q.Enabled() {
				fmt.Fprintf(out, ", queue of %d (%s, timeout %s)", q.Limit, q.Order, q.Timeout)
			}
			fmt.Fprintln(out)
			fmt.Fprintf(out, "  revision %d\n", st.Revision)
			if st.Warning != "" {
				fmt.Fprintf(out, "  warning: %s\n", st.Warning)
			}
			return nil
		},
	}
	f := cmd.Flags()
	ifMatchFlag(cmd, &ifMatch)
	f.StringVar(&strat, "strategy", "", "new strategy name")
	f.StringArrayVar(&params, "param", nil, "strategy parameter KEY=VALUE (repeatable)")
	f.StringVar(&binding, "binding", "", "new binding mode: per-session, on-demand or per-request")
	f.IntVar(&maxInflight, "max-inflight", 0, "calls the front door may have in flight to one replica, per-request (0: no limit)")
	f.IntVar(&queue.Limit, "queue-limit", 0, "calls that may wait at the front door while every replica is at max-inflight (0: no queue)")
	f.DurationVar(&queueTimeout, "queue-timeout", 0, "longest wait in the queue (default 1s)")
	f.StringVar(&queue.Order, "queue-order", "", "queue order: fifo (default) or cost (least Fulcrum-Cost first)")
	return cmd
}

func ctlAddCmd(o *ctlOptions) *cobra.Command {
	var (
		weight                float64
		replace               bool
		pullURL, pullInterval string
	)
	cmd := &cobra.Command{
		Use:   "add GROUP ADDRESS",
		Short: "Register a replica; prints its id and token",
		Long: `Register a replica at ADDRESS (its base URL, e.g. http://10.0.0.5:9001) in
GROUP. Prints the replica's id and token: the token is shown only once, and
the replica's monitor needs it to report its load (or use --pull URL to have
the balancer poll the monitor instead). An address already in the group is
refused unless --replace is given.`,
		Example: `  fulcrum ctl add prime http://127.0.0.1:9001
  fulcrum ctl add prime http://127.0.0.1:9002 --weight 2
  fulcrum ctl add prime http://127.0.0.1:9003 --pull http://127.0.0.1:9003` + monitor.DefaultPullPath,
		Args: exactArgs("GROUP", "ADDRESS"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("weight") && weight == 0 {
				// A zero weight is sent as no weight at all (the default of 1).
				return usageErr(cmd, "--weight 0: must be in (0, 1000000]; leave --weight out for 1")
			}
			reg := protocol.Registration{Address: args[1], Weight: weight, Replace: replace}
			if pullURL != "" {
				reg.Monitor = protocol.MonitorSpec{Mode: protocol.MonitorPull, URL: pullURL}
			}
			if pullInterval != "" {
				if pullURL == "" {
					return usageErr(cmd, "--pull-interval needs --pull")
				}
				d, err := protocol.ParseDuration(pullInterval)
				if err != nil {
					return usageErr(cmd, "--pull-interval: %v", err)
				}
				reg.Monitor.Interval = d
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			r, created, raw, err := c.Register(cmd.Context(), args[0], reg)
			var ae *ctl.APIError
			if errors.As(err, &ae) && ae.ExistingID != "" {
				return apiErr(fmt.Errorf("%w; add --replace to take it over", err))
			}
			if err != nil {
				return apiErr(err)
			}
			out := cmd.OutOrStdout()
			if o.json {
				return printJSON(out, raw)
			}
			verb := "added to"
			if !created {
				verb = "re-registered in"
			}
			fmt.Fprintf(out, "replica %s %s group %s\n", r.ID, verb, args[0])
			fmt.Fprintf(out, "id          %s\n", r.ID)
			fmt.Fprintf(out, "token       %s\n", r.Token)
			fmt.Fprintf(out, "front door  %s\n", r.FrontDoor)
			fmt.Fprintf(out, "report to   %s every %s\n", r.ReportURL, r.ReportInterval)
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&weight, "weight", 1, "relative capacity, in (0, 1000000]")
	f.BoolVar(&replace, "replace", false, "take over an existing registration of the same address (same id, fresh token)")
	f.StringVar(&pullURL, "pull", "", "monitor URL the balancer polls for load reports (pull mode)")
	f.StringVar(&pullInterval, "pull-interval", "", "poll interval (default the group's report interval)")
	return cmd
}

// ctlReplicaCmd builds drain, activate and remove.
func ctlReplicaCmd(o *ctlOptions, verb string) *cobra.Command {
	short := map[string]string{
		"drain":    "Drain a replica: no new bindings, bound clients sent back",
		"activate": "Activate a drained replica again",
		"remove":   "Deregister a replica: drain it, then remove it once idle (--block: for good)",
	}[verb]
	var block bool
	cmd := &cobra.Command{
		Use:   verb + " GROUP ID",
		Short: short,
		Args:  exactArgs("GROUP", "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			var (
				st  ctl.ReplicaState
				raw []byte
			)
			switch verb {
			case "drain":
				st, raw, err = c.Drain(cmd.Context(), args[0], args[1])
			case "activate":
				st, raw, err = c.Activate(cmd.Context(), args[0], args[1])
			case "remove":
				st, raw, err = c.Remove(cmd.Context(), args[0], args[1], block)
			default:
				err = errors.New("unknown replica command " + verb)
			}
			if err != nil {
				return apiErr(err)
			}
			out := cmd.OutOrStdout()
			if o.json {
				return printJSON(out, raw)
			}
			switch {
			case verb == "remove" && st.Blocked != "":
				fmt.Fprintf(out, "replica %s of group %s is draining; it is removed once idle\n", st.ID, st.Group)
				fmt.Fprintf(out, "address %s is blocked: it cannot register again until \"fulcrum ctl unblock %s %s\"\n", st.Blocked, st.Group, st.Blocked)
			case verb == "remove":
				fmt.Fprintf(out, "replica %s of group %s is draining; it is removed once idle\n", st.ID, st.Group)
			default:
				fmt.Fprintf(out, "replica %s of group %s: %s\n", st.ID, st.Group, st.State)
			}
			return nil
		},
	}
	if verb == "remove" {
		cmd.Long = `Deregister a replica: it takes no new bindings at once, its bound clients
are sent back, and it is removed once idle (or after the drain timeout).

A replica whose monitor (fulcrum backend, an agent, the Go monitor library)
is still running registers again as soon as its token stops working, under
a new id: stop the replica's process, or give --block. --block blocks the
replica's address first (persisted; shown under "blocked" by "ctl show"):
the group refuses its registration (403 address_blocked) until
"fulcrum ctl unblock GROUP ADDRESS". A monitor refused this way gives up
after 5 tries and fulcrum backend and the agents exit 1 (unless started with
--retry-forever: they then register again once unblocked).`
		cmd.Example = `  fulcrum ctl remove prime r-0a1b2c3d4e
  fulcrum ctl remove prime r-0a1b2c3d4e --block
  fulcrum ctl unblock prime http://127.0.0.1:9001`
		cmd.Flags().BoolVar(&block, "block", false, "also block the replica's address, so that its monitor cannot register it again (admin token needed)")
	}
	return cmd
}

func ctlUnblockCmd(o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "unblock GROUP ADDRESS",
		Short: "Lift the block \"ctl remove --block\" put on an address: it may register again",
		Args:  exactArgs("GROUP", "ADDRESS"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			st, raw, err := c.Unblock(cmd.Context(), args[0], args[1])
			if err != nil {
				return apiErr(err)
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "address %s of group %s unblocked: it may register again\n", st.Address, st.Group)
			return nil
		},
	}
}
