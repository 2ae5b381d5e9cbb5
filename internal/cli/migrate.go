package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/migrate"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

func init() { subcommands = append(subcommands, newMigrateCmd) }

func newMigrateCmd() *cobra.Command {
	var (
		configPath string
		dryRun     bool
		force      bool
	)
	cmd := &cobra.Command{
		Use:   "migrate --config fulcrum.yaml [--dry-run] [--force]",
		Short: "Copy a single node's state (its data_dir) into etcd, for cluster mode",
		Long: `Copy a single node's state into etcd: every key of the embedded store in
the config file's data_dir (groups, replicas with their token hashes,
blocked addresses, whatever else it holds) goes under store.etcd.prefix,
values unchanged, in transactions of at most 128 keys and 1 MiB. The
config file is the one "fulcrum serve" runs with; it must set both
data_dir and store.etcd.

The balancer using data_dir must be stopped first: migrate refuses, after a
short wait, a data_dir another process holds. It also refuses (exit 2,
saying why, writing nothing) a prefix that already holds fulcrum data, and
a data_dir whose schema version differs from the etcd store's.

--force copies into a prefix that holds data: it overwrites the keys the
data_dir holds and deletes nothing (keys only etcd holds stay). --dry-run
prints what would be copied, and whether it would be refused, and writes
nothing, not even the schema version of an empty prefix.

migrate prints the keys per kind (new, overwritten, unchanged), then reads
every copied key back from etcd and compares it with the data_dir.
Revisions are etcd's own afterwards, so a group's ETag changes.
Exit status: 0 copied and verified (or a dry run that would copy), 2
refused, 1 failed (etcd unreachable, a copy or the verification failed).`,
		Example: `  fulcrum migrate --config /etc/fulcrum/fulcrum.yaml --dry-run
  fulcrum migrate --config /etc/fulcrum/fulcrum.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return exitCode(2, errors.New("migrate: --config is required: the config file with data_dir and store.etcd"))
			}
			cfg, err := config.Load(configPath)
			if err != nil {
				printConfigErrors(cmd.ErrOrStderr(), err)
				return reported(2, err)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runMigrate(ctx, configPath, cfg, migrateFlags{dryRun: dryRun, force: force}, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "the config file of fulcrum serve, with data_dir and store.etcd (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be copied (keys per kind) and write nothing")
	cmd.Flags().BoolVar(&force, "force", false, "copy into a prefix that holds fulcrum data: overwrite the keys data_dir holds, delete none")
	return cmd
}

type migrateFlags struct{ dryRun, force bool }

// runMigrate is fulcrum migrate once the config file is read.
func runMigrate(ctx context.Context, path string, cfg config.File, fl migrateFlags, out io.Writer) error {
	if !cfg.Store.Etcd.Enabled() {
		return exitCode(2, fmt.Errorf("%s: store.etcd: missing, must name the etcd to copy into (store: {etcd: {endpoints: [http://host:2379]}})", path))
	}
	dbPath := filepath.Join(cfg.DataDir, boltstore.FileName)
	if _, err := os.Stat(dbPath); err != nil {
		return exitCode(2, fmt.Errorf("%s: data_dir %q: no fulcrum store there (%s: %w)", path, cfg.DataDir, dbPath, unwrapPath(err)))
	}
	src, err := boltstore.Open(cfg.DataDir)
	if errors.Is(err, boltstore.ErrInUse) {
		return exitCode(2, fmt.Errorf("migrate: data_dir %q is in use by a running fulcrum (serve): stop fulcrum serve first: %w", cfg.DataDir, err))
	}
	if err != nil {
		return exitCode(1, fmt.Errorf("migrate: %w", err))
	}
	defer src.Close()
	kvs, _, err := src.List(ctx, "")
	if err != nil {
		return exitCode(1, fmt.Errorf("migrate: %w", err))
	}
	opts := etcdStoreOptions(cfg.Store.Etcd)
	where := fmt.Sprintf("etcd prefix %s at %s", opts.Prefix, strings.Join(opts.Endpoints, ","))
	held, err := etcdstore.Inspect(ctx, opts)
	if err != nil {
		return exitCode(1, fmt.Errorf("migrate: %w", err))
	}
	plan := migrate.Decide(kvs, boltstore.SchemaVersion, migrate.Target{
		Schema: held.Schema, CodeSchema: etcdstore.SchemaVersion,
		KVs: held.KVs, Others: len(held.Others), Where: where,
	}, fl.force)
	fmt.Fprintf(out, "from %s (schema version %d)\ninto %s\n", dbPath, boltstore.SchemaVersion, where)
	printPlan(out, plan)
	if plan.Refusal != nil {
		return exitCode(2, plan.Refusal)
	}
	if fl.dryRun {
		fmt.Fprintln(out, "dry run: nothing written")
		return nil
	}
	dst, err := etcdstore.Open(ctx, opts)
	if err != nil {
		return exitCode(1, fmt.Errorf("migrate: %w", err))
	}
	defer dst.Close()
	copied, err := migrate.Copy(ctx, dst, kvs, fl.force)
	fmt.Fprintf(out, "copied %d keys in %d transactions\n", copied.Keys, copied.Txns)
	if err != nil {
		return exitCode(1, err)
	}
	v, err := migrate.Verify(ctx, dst, kvs)
	if err != nil {
		return exitCode(1, err)
	}
	if !v.OK() {
		return exitCode(1, fmt.Errorf("migrate: verification failed: of %d keys read back from etcd, %d missing (%s), %d different (%s)",
			v.Checked, len(v.Missing), firstFew(v.Missing), len(v.Different), firstFew(v.Different)))
	}
	fmt.Fprintf(out, "verified: read back %d keys from etcd, each equal to the data_dir's\n", v.Checked)
	return nil
}

// printPlan prints the keys per kind.
func printPlan(out io.Writer, p migrate.Plan) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tKEYS\tNEW\tOVERWRITTEN\tUNCHANGED")
	for _, k := range append(p.Kinds, p.Total) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", k.Name, k.Keys, k.New, k.Overwritten, k.Unchanged)
	}
	tw.Flush()
	if p.Kept > 0 {
		fmt.Fprintf(out, "kept: %d keys in etcd that the data_dir does not hold (never deleted)\n", p.Kept)
	}
}

// firstFew lists at most five keys.
func firstFew(keys []string) string {
	if len(keys) > 5 {
		return strings.Join(keys[:5], ", ") + ", ..."
	}
	return strings.Join(keys, ", ")
}

// unwrapPath drops the path of an *os.PathError, which the message names
// already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
