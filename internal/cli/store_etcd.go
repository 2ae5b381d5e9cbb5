package cli

import (
	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// etcdStoreOptions are the etcd store's options for a config file's
// store.etcd (validated), its defaults applied: without endpoints, those
// of the embedded member (its client URL).
func etcdStoreOptions(e config.EtcdStore) etcdstore.Options {
	e = e.WithDefaults()
	if len(e.Endpoints) == 0 && e.Embedded.Enabled() {
		e.Endpoints = []string{e.Embedded.WithDefaults("").ClientURL}
	}
	o := etcdstore.Options{
		Endpoints:   e.Endpoints,
		Prefix:      e.Prefix,
		DialTimeout: e.DialTimeout.D(),
		Username:    e.Username,
		Password:    e.Password,
	}
	if e.TLS != (config.EtcdTLS{}) {
		o.TLS = &certs.ClientFiles{CA: e.TLS.CA, Cert: e.TLS.Cert, Key: e.TLS.Key}
	}
	return o
}
