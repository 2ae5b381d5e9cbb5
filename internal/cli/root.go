// Package cli holds the fulcrum command line: one cobra command per
// subcommand, each in a file of its own.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/buildinfo"
)

// Version is set at link time:
//
//	go build -ldflags "-X github.com/fulcrum-lb/fulcrum/internal/cli.Version=v1.2.3" ./cmd/fulcrum
//
// Left empty, the build's version is the module version Go recorded, else
// "dev" (see buildinfo.Info.Version).
var Version string

// build is the binary's identity, reported by "fulcrum version",
// "fulcrum --version" and /healthz.
func build() buildinfo.Info { return buildinfo.Read(Version) }

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
	// printed is set when the command printed err itself.
	printed bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode wraps err so that Main exits with code.
func exitCode(code int, err error) error { return &exitError{code: code, err: err} }

// reported wraps err, which the command has printed already, so that Main
// exits with code without printing it again.
func reported(code int, err error) error { return &exitError{code: code, err: err, printed: true} }

// NewRoot builds the fulcrum command tree.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "fulcrum",
		Short: "Adaptive load balancing for replicated RPC servers",
		Long: `fulcrum binds each client to a replica, watches replica load, and rebinds
clients on demand when loads drift, so load stays balanced while calls go
straight from client to replica.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       build().Text("fulcrum"),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.Flags().BoolP("version", "v", false, `print the version, commit, commit time and Go version (as "fulcrum version")`)
	root.AddCommand(newVersionCmd())
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// typedArgs are the arguments Main was given, for commands that record
// their command line as typed (fulcrum bench).
var typedArgs []string

// subcommands are added by the files that define them.
var subcommands []func() *cobra.Command

// Main runs the command line and returns the process exit code.
func Main(args []string) int {
	typedArgs = args
	root := NewRoot()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || !ee.printed {
			fmt.Fprintln(os.Stderr, "fulcrum:", err)
		}
		if ee != nil {
			return ee.code
		}
		return 1
	}
	return 0
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print fulcrum's version, commit, commit time and Go version",
		Long: `Print fulcrum's version, the commit it was built from ("+dirty" when the
tree had uncommitted changes), that commit's time and the Go version that
built it: the values /healthz reports. "fulcrum --version" prints the same.
Go records no build date; a build without VCS information says "unknown".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.OutOrStdout(), build().Text("fulcrum"))
			return nil
		},
	}
}
