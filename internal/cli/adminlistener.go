package cli

import (
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// adminListener is the admin API's listener: plain, or TLS with the
// certificates of admin_tls, which a reload may turn on, off or point at
// other files (setTLS). Connections accepted before a change keep what
// they started with.
type adminListener struct {
	net.Listener
	set atomic.Pointer[certs.ServerSet] // nil: plain
}

// Accept returns the next connection, under TLS when admin_tls is set;
// net/http runs its handshake.
func (l *adminListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if s := l.set.Load(); s != nil {
		return tls.Server(c, s.TLSConfig()), nil
	}
	return c, nil
}

// adminTLSSwitch applies admin_tls to the admin listener, to the certificates
// the balancer polls, and to the admin URL registering replicas are told.
type adminTLSSwitch struct {
	ln      *adminListener
	b       *balancer.Balancer
	log     *slog.Logger
	httpURL string // the admin URL without TLS
}

// adminURLFor is the admin API's URL with set in force (nil: plain).
func adminURLFor(httpURL string, set *certs.ServerSet) string {
	if set == nil {
		return httpURL
	}
	return "https://" + strings.TrimPrefix(httpURL, "http://")
}

// apply puts next in force: new connections are accepted with it. Its
// files were checked before (fileChecks); one that fails now keeps what
// was in force.
func (a *adminTLSSwitch) apply(_, next config.File) error {
	var set *certs.ServerSet
	if c := next.AdminTLS; c.Enabled() {
		var err error
		set, err = certs.NewServerSet(certs.ServerConfig{Listener: "admin", Cert: c.Cert, Key: c.Key, ClientCA: c.ClientCA, ALPN: adminALPN}, certs.ServerOptions{Logger: a.log})
		if err != nil {
			return err
		}
	}
	old := a.ln.set.Swap(set)
	if old != nil {
		a.b.UnwatchCertificates(old)
	}
	if set != nil {
		a.b.WatchCertificates(set)
	}
	a.b.SetAdminURL(adminURLFor(a.httpURL, set))
	return nil
}
