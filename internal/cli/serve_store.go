package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// parseEtcdFlag splits --etcd URL,... and checks each URL.
func parseEtcdFlag(v string) ([]string, error) {
	var eps []string
	for ep := range strings.SplitSeq(v, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		if msg := config.CheckEtcdEndpoint(ep); msg != "" {
			return nil, fmt.Errorf("serve: --etcd: invalid value %q, %s", ep, msg)
		}
		eps = append(eps, ep)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("serve: --etcd: invalid value %q, must be etcd client URLs separated by commas", v)
	}
	return eps, nil
}

// openStore opens the store cfg names: etcd when store.etcd is set, else
// the bbolt file in data_dir. etcd is retried for its dial_timeout; the
// error then names the endpoints tried.
func openStore(ctx context.Context, cfg config.File, dataDirSet bool, log *slog.Logger) (store.Store, error) {
	e := cfg.Store.Etcd
	if !e.Enabled() {
		return boltstore.Open(cfg.DataDir)
	}
	if dataDirSet {
		log.Warn("data_dir is not used with store.etcd: the state is on etcd", "data_dir", cfg.DataDir)
	}
	e = e.WithDefaults()
	opts := etcdStoreOptions(e)
	opts.Metrics = etcdstore.NewMetrics() // served on /metrics (serve_metrics.go)
	opts.Logger = log
	st, err := etcdstore.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("serve: etcd not reachable within dial_timeout %v (endpoints tried: %s): %w", e.DialTimeout, strings.Join(e.Endpoints, ","), err)
	}
	return st, nil
}

// instanceOf fills instance's defaults: the host name, and the admin
// listener's URL.
func instanceOf(in config.Instance, adminURL string) (config.Instance, error) {
	if in.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			return in, fmt.Errorf("serve: instance.name: not set and the host name is unknown (%w); set instance.name", err)
		}
		in.Name = h
	}
	if in.AdminURL == "" {
		in.AdminURL = adminURL
	}
	return in, nil
}

// checkEtcdTLSFiles reads the store.etcd.tls files.
func checkEtcdTLSFiles(f config.File) []error {
	t := f.Store.Etcd.TLS
	if !f.Store.Etcd.Enabled() || t == (config.EtcdTLS{}) {
		return nil
	}
	if _, err := certs.NewClient(certs.ClientFiles{CA: t.CA, Cert: t.Cert, Key: t.Key}); err != nil {
		field, path := "store.etcd.tls", t.CA
		var fe *certs.FileError
		if errors.As(err, &fe) {
			field, path = "store.etcd.tls."+fe.Field, fe.Path
		}
		return []error{&protocol.FieldError{Field: field, Value: path, Allowed: "its files must be readable PEM, the key matching its certificate (" + err.Error() + ")"}}
	}
	return nil
}
