package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/ctl"
)

func init() { ctlExtraCmds = append(ctlExtraCmds, ctlSessionsCmd) }

// ctlSessionsCmd prints GET /v1/groups/{name}/sessions.
func ctlSessionsCmd(o *ctlOptions) *cobra.Command {
	var (
		limit int
		after string
	)
	cmd := &cobra.Command{
		Use:   "sessions GROUP [--limit N] [--after TOKEN]",
		Short: "Show a page of a group's session table: client-activated objects and their replicas",
		Long: `Show a page of a group's session table as the instance at --admin holds it
(GET /v1/groups/{name}/sessions): each client-activated object (rule, key)
with the replica that created it, when it was created, how long it has been
idle and when it expires if no call comes. Singleton and single-call rules
keep no entries. Entries are ordered by rule then key; --limit bounds the
page (default 100, range [1, 10000]) and --after continues from a page's
next token, which the last line prints. --json prints the API's answer.
See docs/affinity.md.`,
		Example: `  fulcrum ctl sessions objects
  fulcrum ctl sessions objects --limit 1000 --after "0/x42"
  fulcrum ctl sessions objects --json`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("limit") && (limit < 1 || limit > 10000) {
				return usageErr(cmd, "--limit %d: must be in [1, 10000]", limit)
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			l, raw, err := c.Sessions(cmd.Context(), args[0], limit, after)
			if err != nil {
				return apiErr(err)
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			return ctl.PrintSessions(cmd.OutOrStdout(), l, time.Now())
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "the most entries to show (default 100, range [1, 10000])")
	cmd.Flags().StringVar(&after, "after", "", "a page's next token (<rule>/<key>): show the entries after it")
	return cmd
}
