package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/ctl"
)

func init() { ctlExtraCmds = append(ctlExtraCmds, ctlConnectionsCmd) }

// ctlConnectionsCmd prints GET /v1/groups/{name}/connections.
func ctlConnectionsCmd(o *ctlOptions) *cobra.Command {
	var (
		limit int
		after uint64
		all   bool
	)
	cmd := &cobra.Command{
		Use:   "connections GROUP [--limit N] [--after ID] [--all]",
		Short: "List a tcp group's open connections: client, replica, bytes each way, age",
		Long: `List the connections a tcp group's front door proxies now (its connection
table, GET /v1/groups/{name}/connections): each connection's id, client
address (from a trusted PROXY header when there was one), replica, the
replica's address, bytes from the client (IN) and back (OUT), age and time
since its last byte (IDLE). Groups of other protocols have none.

The table comes a page at a time, in id order: --limit connections (default
100, at most 10000) with ids above --after (default 0, the first). The line
under the table gives the --after of the next page; --all reads every page
(--limit connections a request, 10000 by default) and prints them as one
table. --json prints the API's answer (with --all, one list of every page's
connections). See docs/api.md.`,
		Example: `  fulcrum ctl connections echo
  fulcrum ctl connections echo --limit 20 --after 1040
  fulcrum ctl connections echo --all --json`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("limit") && (limit < 1 || limit > ctl.MaxConnectionsPage) {
				return usageErr(cmd, "--limit %d: must be in [1, %d]", limit, ctl.MaxConnectionsPage)
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if all {
				size := limit
				if size == 0 {
					size = ctl.MaxConnectionsPage
				}
				list, err := c.AllConnections(cmd.Context(), args[0], after, size)
				if err != nil {
					return apiErr(err)
				}
				if o.json {
					data, err := json.Marshal(list)
					if err != nil {
						return fmt.Errorf("ctl: encode the connections: %w", err)
					}
					return printJSON(out, data)
				}
				return ctl.PrintConnections(out, args[0], list)
			}
			list, raw, err := c.Connections(cmd.Context(), args[0], after, limit)
			if err != nil {
				return apiErr(err)
			}
			if o.json {
				return printJSON(out, raw)
			}
			return ctl.PrintConnections(out, args[0], list)
		},
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 0, "connections per page, in [1, 10000] (default 100; with --all 10000)")
	f.Uint64Var(&after, "after", 0, "list the connections with ids above this one (a page's next)")
	f.BoolVar(&all, "all", false, "read every page and print one table")
	return cmd
}
