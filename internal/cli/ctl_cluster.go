package cli

import (
	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/ctl"
)

func init() { ctlExtraCmds = append(ctlExtraCmds, ctlClusterCmd) }

// ctlClusterCmd prints GET /v1/cluster.
func ctlClusterCmd(o *ctlOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "cluster [-o json]",
		Short: "Show the instances of the cluster, the leader of each group, etcd's health",
		Long: `Show the cluster as the instance at --admin sees it (GET /v1/cluster): every
live instance (the answering one marked *) with its admin URL, start time,
version and its front doors as bound there (or why one cannot listen), the
analyzer leader of each group, and each etcd endpoint: reachable, etcd's
leader, version, database size, or the error. A balancer without store.etcd
shows itself as a single node. -o json (or --json) prints the API's answer.
See docs/cluster.md.`,
		Example: `  fulcrum ctl cluster --admin http://10.0.0.1:7070 --token "$FULCRUM_TOKEN"
  fulcrum ctl cluster -o json`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON := o.json
			switch output {
			case "":
			case "json":
				asJSON = true
			default:
				return usageErr(cmd, "-o %q: the output formats are json, or the table by default", output)
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			cl, raw, err := c.Cluster(cmd.Context())
			if err != nil {
				return apiErr(err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			return ctl.PrintCluster(cmd.OutOrStdout(), cl)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", `"json" prints the API's JSON answer instead of tables`)
	return cmd
}
