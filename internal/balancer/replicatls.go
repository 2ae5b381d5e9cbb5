package balancer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A group's replica_tls (protocol.ReplicaTLS) is a *certs.Client read from
// its files when the group is built or its settings change, and swapped
// into g.rtls. Every TLS connection to an https:// replica — the front
// door's calls, health probes, strategy probes, report pulls — reads g.rtls
// when it dials, so changed settings apply to the next connection without
// restarting anything; idle kept-alive connections are closed when the
// settings change (closeIdleReplicaConnsLocked).

// replicaTLSClient reads the files of gs.ReplicaTLS. Its errors are
// *protocol.FieldError naming the setting (replica_tls.ca, .cert, .key),
// the file and why it cannot be used.
func replicaTLSClient(gs protocol.Group) (*certs.Client, error) {
	t := gs.ReplicaTLS
	c, err := certs.NewClient(certs.ClientFiles{CA: t.CA, Cert: t.Cert, Key: t.Key, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify})
	var fe *certs.FileError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &fe):
		allowed := "must be a readable PEM certificate file"
		switch fe.Field {
		case "key":
			allowed = "must be a readable PEM private key file"
		case "cert":
			allowed = "must be a readable PEM certificate file whose key is replica_tls.key"
		}
		return nil, &protocol.FieldError{Field: "replica_tls." + fe.Field, Value: fe.Path, Allowed: fmt.Sprintf("%s (%v)", allowed, fe.Err)}
	case errors.Is(err, certs.ErrCertWithoutKey):
		return nil, &protocol.FieldError{Field: "replica_tls.key", Value: t.Key, Allowed: "must be set together with replica_tls.cert"}
	}
	return nil, err
}

// setReplicaTLSLocked puts c in use for the group's next TLS connections
// to replicas, and warns when it verifies nothing. Caller holds g.mu (or g
// is not yet shared).
func (g *group) setReplicaTLSLocked(c *certs.Client) {
	old := g.rtls.Swap(c)
	if c.Files().InsecureSkipVerify && (old == nil || !old.Files().InsecureSkipVerify) {
		g.b.log.Warn("replica_tls.insecure_skip_verify is set: replica certificates are not verified", "group", g.name)
	}
}

// closeIdleReplicaConnsLocked closes the kept-alive connections to
// replicas made with an earlier replica TLS client (the front door's and
// the pulls'), so that changed settings apply to every call that follows.
// Health probes open a connection each; the strategy's probe loop is
// restarted with the group's update. Caller holds g.mu.
func (g *group) closeIdleReplicaConnsLocked() {
	if fd, ok := g.fd.(interface{ CloseIdleUpstream() }); ok {
		fd.CloseIdleUpstream()
	}
	g.pullTLS.CloseIdleConnections()
}

// replicaTLS is the group's replica TLS client in use.
func (g *group) replicaTLS() *certs.Client { return g.rtls.Load() }

// dialReplicaTLS opens a TLS connection to a replica with the balancer's
// Dial and the group's replica TLS client in use at the time, offering
// nextProtos by ALPN.
func (g *group) dialReplicaTLS(nextProtos ...string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return g.replicaTLS().DialTLS(g.b.opts.Dial, nextProtos...)(ctx, network, addr)
	}
}

// newPullClient is the client of the group's pulls from https:// monitor
// URLs (http:// ones use Options.HTTPClient).
func (g *group) newPullClient() *http.Client {
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{Proxy: nil, DialContext: g.b.opts.Dial, DialTLSContext: g.dialReplicaTLS("http/1.1"), MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second},
	}
}

// pullClientFor is the client of a pull from monitor URL u.
func (g *group) pullClientFor(u string) *http.Client {
	if strings.HasPrefix(strings.ToLower(u), "https://") {
		return g.pullTLS
	}
	return g.b.opts.HTTPClient
}

// ReloadReplicaTLS reads again the client certificate pairs of every
// group's replica_tls (certs.Client.Reload). A pair that cannot be read
// stays as it was; the errors, one per group, are joined.
func (b *Balancer) ReloadReplicaTLS() error {
	b.mu.RLock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.RUnlock()
	var errs []error
	for _, g := range groups {
		if err := g.replicaTLS().Reload(); err != nil {
			errs = append(errs, fmt.Errorf("balancer: group %s: replica_tls: %w", g.name, err))
		}
	}
	return errors.Join(errs...)
}

// CheckReplicaTLS reads the files of gs.ReplicaTLS as the group would,
// without building it: `serve --check` and the config file's checks. Its
// error is a *protocol.FieldError naming the setting, the file and why it
// cannot be used.
func CheckReplicaTLS(gs protocol.Group) error {
	_, err := replicaTLSClient(gs)
	return err
}
