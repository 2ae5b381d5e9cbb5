package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// checkFiles reads the files cfg names besides itself — the certificate
// and key files of groups[].tls, groups[].replica_tls and admin_tls, once
// TLS is wired in — and returns every problem (config.Errors where the
// problems have lines). It opens no store and binds nothing. `serve
// --check`, the start and every reload run it before anything changes.
func checkFiles(cfg config.File) error {
	_ = cfg
	return nil
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
	cfg, err := config.Load(path)
	if err == nil {
		err = checkFiles(cfg)
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
