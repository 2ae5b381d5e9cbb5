package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// peerTimeout bounds one call to another instance's admin API.
const peerTimeout = 5 * time.Second

// peerTLS is the TLS client side of an instance's calls to the other
// instances' admin API in a cluster (the load pushes and bound notices:
// balancer.Options.PeerClient). It verifies their admin certificates with
// instance.peer_ca when set, else with the system roots plus
// admin_tls.client_ca when set (a private CA that signs the instances'
// certificates usually signs their client certificates too). When the
// admin API requires client certificates (admin_tls.client_ca), it
// presents this instance's own admin_tls pair, which the others verify
// with the same client_ca: that certificate then needs the clientAuth
// extended key usage (or none). The files are read at start and again at
// every reload (a reload whose files cannot be read keeps the ones in
// use, and says so). Safe for concurrent use.
type peerTLS struct {
	cur atomic.Pointer[certs.Client]
}

// peerFiles are the client files of cfg's calls to the other instances.
func peerFiles(cfg config.File) certs.ClientFiles {
	f := certs.ClientFiles{CA: cfg.Instance.PeerCA}
	if f.CA == "" {
		f.CA, f.SystemRoots = cfg.AdminTLS.ClientCA, true
	}
	if cfg.AdminTLS.ClientCA != "" {
		f.Cert, f.Key = cfg.AdminTLS.Cert, cfg.AdminTLS.Key
	}
	return f
}

// newPeerTLS reads cfg's files; nil without store.etcd (a single node
// calls no other instance). Errors name the config key of the file.
func newPeerTLS(cfg config.File) (*peerTLS, error) {
	if !cfg.Store.Etcd.Enabled() {
		return nil, nil
	}
	p := &peerTLS{}
	if err := p.reload(cfg); err != nil {
		return nil, err
	}
	return p, nil
}

// reload reads cfg's files again; on error the ones in use stay.
func (p *peerTLS) reload(cfg config.File) error {
	if p == nil {
		return nil
	}
	f := peerFiles(cfg)
	c, err := certs.NewClient(f)
	if err != nil {
		var fe *certs.FileError
		if errors.As(err, &fe) {
			key := map[string]string{"ca": "instance.peer_ca", "cert": "admin_tls.cert", "key": "admin_tls.key"}[fe.Field]
			if fe.Field == "ca" && cfg.Instance.PeerCA == "" {
				key = "admin_tls.client_ca"
			}
			return fmt.Errorf("serve: %s %q, to verify the other instances' admin API: %w", key, fe.Path, fe.Err)
		}
		return fmt.Errorf("serve: the calls to the other instances' admin API: %w", err)
	}
	p.cur.Store(c)
	return nil
}

// client is the http.Client of the calls to the other instances; nil for
// a nil peerTLS (the balancer's default).
func (p *peerTLS) client() *http.Client {
	if p == nil {
		return nil
	}
	d := &net.Dialer{Timeout: peerTimeout}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return p.cur.Load().DialTLS(d.DialContext)(ctx, network, addr)
	}
	return &http.Client{Timeout: peerTimeout, Transport: tr}
}
