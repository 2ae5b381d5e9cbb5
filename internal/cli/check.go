package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fileChecks are the checks of the files a config file names besides
// itself — the certificate and key files of groups[].tls,
// groups[].replica_tls and admin_tls — that `serve --check`, the start and
// every reload run before anything changes. They open no store and bind
// nothing.
func fileChecks() []config.Check {
	return []config.Check{checkGroupTLSFiles, checkAdminTLSFiles, checkEtcdTLSFiles}
}

// checkGroupTLSFiles reads the tls and replica_tls files of every group.
func checkGroupTLSFiles(f config.File) []error {
	var errs []error
	for i, g := range f.Groups {
		for _, check := range []func(protocol.Group) error{balancer.CheckTLS, balancer.CheckReplicaTLS} {
			if err := check(g); err != nil {
				var fe *protocol.FieldError
				if errors.As(err, &fe) {
					fe.Field = fmt.Sprintf("groups[%d].%s", i, fe.Field)
				}
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// checkAdminTLSFiles reads the admin_tls files.
func checkAdminTLSFiles(f config.File) []error {
	a := f.AdminTLS
	if !a.Enabled() {
		return nil
	}
	_, err := certs.NewServerSet(certs.ServerConfig{Listener: "admin", Cert: a.Cert, Key: a.Key, ClientCA: a.ClientCA, ALPN: adminALPN}, certs.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return []error{&protocol.FieldError{Field: "admin_tls", Value: a.Cert, Allowed: "its files must be readable PEM, the key matching its certificate (" + err.Error() + ")"}}
	}
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
