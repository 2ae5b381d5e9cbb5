package cli

import "github.com/spf13/cobra"

// ifMatchFlag adds --if-match REV to a command that changes a group: the
// change applies only if the group is still at revision REV (its ETag, as
// "ctl show" prints it); 0, the default, applies it whatever the revision.
func ifMatchFlag(cmd *cobra.Command, rev *int64) {
	cmd.Flags().Int64Var(rev, "if-match", 0, "change the group only if it is still at this revision (as \"ctl show\" prints it); otherwise fail with the current one")
}

// checkIfMatch refuses a negative --if-match.
func checkIfMatch(cmd *cobra.Command, rev int64) error {
	if rev < 0 {
		return usageErr(cmd, "--if-match %d: a revision is a positive integer", rev)
	}
	return nil
}
