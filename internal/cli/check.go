package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fileChecks are the checks of the files a config file names besides
// itself — the certificate and key files of groups[].replica_tls (and of
// groups[].tls and admin_tls, once those are wired in) — that `serve
// --check`, the start and every reload run before anything changes. They
// open no store and bind nothing.
func fileChecks() []config.Check {
	return []config.Check{checkReplicaTLSFiles}
}

// checkReplicaTLSFiles reads the replica_tls files of every group.
func checkReplicaTLSFiles(f config.File) []error {
	var errs []error
	for i, g := range f.Groups {
		if err := balancer.CheckReplicaTLS(g); err != nil {
			var fe *protocol.FieldError
			if errors.As(err, &fe) {
				fe.Field = fmt.Sprintf("groups[%d].%s", i, fe.Field)
			}
			errs = append(errs, err)
		}
	}
	return errs
}

// printConfigErrors writes one line per problem of err (at most
// config.MaxReported, then "… and N more") to w.
func printConfigErrors(w io.Writer, err error) {
	var es config.Errors
	if errors.As(err, &es) {
		for _, l := range es.Lines() {
			fmt.Fprintln(w, l)
		}
		return
	}
	fmt.Fprintln(w, err)
}

// checkConfig is `fulcrum serve --check`: it reads the config file and
// the files it names, prints every problem, one a line in line order, to
// errOut, or "<file>: ok" to out, and exits 2 or 0. It opens no store and
// binds nothing, so it can run next to the balancer it checks for
// (conflicts with groups created through the API show at reload or start).
func checkConfig(path string, override func(*config.File), insecure bool, out, errOut io.Writer) error {
	if path == "" {
		return exitCode(2, errors.New("serve: --check needs --config FILE"))
	}
	cfg, err := config.Load(path, fileChecks()...)
	if err == nil {
		override(&cfg)
	}
	if err == nil {
		if aerr := checkAdminExposure(cfg.Admin, cfg.AdminToken, insecure); aerr != nil {
			err = fmt.Errorf("%s: %w", path, aerr)
		}
	}
	if err != nil {
		printConfigErrors(errOut, err)
		return reported(2, err)
	}
	fmt.Fprintf(out, "%s: ok\n", path)
	return nil
}
