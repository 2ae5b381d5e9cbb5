package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
)

func init() { ctlExtraCmds = append(ctlExtraCmds, ctlIORCmd) }

// ctlIORCmd prints a GIOP group's reference with extra front-door
// addresses, as one IIOP 1.2 profile with TAG_ALTERNATE_IIOP_ADDRESS
// components (registry.GroupIOR), or as a multi-address corbaloc URL.
func ctlIORCmd(o *ctlOptions) *cobra.Command {
	var also []string
	var corbaloc bool
	cmd := &cobra.Command{
		Use:   "ior GROUP [--also HOST:PORT,...] [--corbaloc]",
		Short: "Print a GIOP group's reference, listing more front doors",
		Long: `Print a GIOP group's reference: the front door of its status (GET
/v1/groups/{name}, reference.corbaloc) and then each --also address, as one
IIOP 1.2 profile with a TAG_ALTERNATE_IIOP_ADDRESS component per further
address (typed like the group's IOR). omniORB and omniORBpy connect to the
next address when one cannot be connected to; they ignore a second profile.
--corbaloc prints the same addresses as a corbaloc URL instead.
See docs/cluster.md, "GIOP clients across instances".`,
		Example: `  fulcrum ctl ior prime --also 10.0.0.2:2809,10.0.0.3:2809
  fulcrum ctl ior prime --also lb2.example:2809 --corbaloc`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var extra []ior.Address
			for _, s := range also {
				a, err := ior.ParseHostPort(strings.TrimSpace(s))
				if err != nil {
					return usageErr(cmd, "--also: %v", err)
				}
				extra = append(extra, a)
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			st, _, err := c.Group(cmd.Context(), args[0])
			if err != nil {
				return apiErr(err)
			}
			if st.Reference == nil {
				return exitCode(1, fmt.Errorf("group %q has no object reference: it is a %s group, not giop (or its advertise URL is not a corbaloc URL)", args[0], st.Protocol))
			}
			loc, err := ior.ParseCorbaloc(st.Reference.Corbaloc)
			if err != nil {
				return exitCode(1, fmt.Errorf("group %q: reference.corbaloc %q: %w", args[0], st.Reference.Corbaloc, err))
			}
			typed, err := ior.ParseStringified(st.Reference.IOR)
			if err != nil {
				return exitCode(1, fmt.Errorf("group %q: reference.ior: %w", args[0], err))
			}
			ref, err := registry.GroupIOR(loc, typed.TypeID, extra)
			if err != nil {
				return exitCode(1, err)
			}
			out := ref.String()
			if corbaloc {
				var addrs []ior.Address
				for _, ep := range ref.Endpoints() {
					addrs = append(addrs, ep.Address)
				}
				out = ior.Corbaloc{Addresses: addrs, Key: loc.Key}.String()
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), out)
			return err
		},
	}
	cmd.Flags().StringSliceVar(&also, "also", nil, "more front doors, HOST:PORT (comma-separated or repeated)")
	cmd.Flags().BoolVar(&corbaloc, "corbaloc", false, "print a multi-address corbaloc URL instead of an IOR")
	return cmd
}
