package cli

import "github.com/spf13/cobra"

func init() { subcommands = append(subcommands, newAgentCmd) }

// agentSubcommands are the side-car agents, one per protocol, added by the
// files that define them (agent_http.go, agent_giop.go).
var agentSubcommands []func() *cobra.Command

func newAgentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a side-car monitor beside an unmodified replica",
		Long: `An agent runs beside a replica that has no fulcrum monitor built in. It
registers the replica with the balancer, measures its load, reports it
(push, or answers pulls) and applies the advisories it gets back.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	for _, add := range agentSubcommands {
		cmd.AddCommand(add())
	}
	return cmd
}
