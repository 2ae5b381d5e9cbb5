package tcpdoor

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("tcpdoor: server closed")

// Options configure a Server. The zero value is usable.
type Options struct {
	// Logger receives the front door's own log lines; slog.Default() when
	// nil.
	Logger *slog.Logger
	// Now is the clock of the connection table and of the latencies
	// reported to Group.Observe; time.Now when nil. Deadlines are set
	// from it too, so it must follow the real clock.
	Now func() time.Time
	// Dial opens the connections to replicas; when nil, a net.Dialer's
	// without TCP keep-alive.
	// Each dial is bounded by the group's connect timeout. Splice needs
	// it to return a *net.TCPConn.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DescriptorLimit is the descriptor limit the cap of a group without
	// tcp.max_connections is derived from (DerivedMaxConnections); 0
	// reads the process's RLIMIT_NOFILE.
	DescriptorLimit uint64
}

// Server is the TCP front door of one group. Safe for concurrent use.
type Server struct {
	g    frontdoor.Group
	log  *slog.Logger
	now  func() time.Time
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// derivedMax is the cap when the group sets none.
	derivedMax int
	// active counts the client connections admitted and not yet ended.
	active atomic.Int64
	// spill rotates where the in-flight limit's fall-back scan starts.
	spill atomic.Uint32
	// trusted caches the parsed tcp.proxy_protocol.trusted list.
	trusted atomic.Pointer[trustList]

	conns acceptloop.Conns[*conn]
}

// New returns the TCP front door of g.
func New(g frontdoor.Group, opts Options) *Server {
	s := &Server{g: g, log: opts.Logger, now: opts.Now, dial: opts.Dial}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.dial == nil {
		// No TCP keep-alive towards replicas (as HAProxy's default):
		// timeouts.idle ends a connection whose peer went silent, and the
		// three setsockopt calls per connection cost 3–10% of a short
		// connection's CPU (BenchmarkConnectExchangeClose).
		s.dial = (&net.Dialer{KeepAlive: -1}).DialContext
	}
	nofile := opts.DescriptorLimit
	if nofile == 0 {
		nofile = descriptorLimit()
	}
	s.derivedMax = DerivedMaxConnections(nofile)
	return s
}

// Serve accepts connections on ln and proxies each to a replica until
// Shutdown or Close, then returns ErrServerClosed. Connections beyond the
// listener's cap are closed as they are accepted. Temporary accept errors
// are retried with a back-off (package acceptloop); any other ends Serve
// and is returned.
func (s *Server) Serve(ln net.Listener) error {
	return s.conns.Serve(&limitListener{Listener: ln, s: s}, s.newConn, (*conn).serve,
		acceptloop.Options{Logger: s.log, Name: "tcp front door", Closed: ErrServerClosed})
}

// Shutdown stops accepting connections and lets the open ones finish; when
// ctx ends first, it closes what is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.conns.Close()
	select {
	case <-s.conns.Done():
		return nil
	case <-ctx.Done():
	}
	s.abortAll()
	s.conns.Wait()
	return ctx.Err()
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	s.conns.Close()
	s.abortAll()
	s.conns.Wait()
	return nil
}

func (s *Server) abortAll() {
	for _, c := range s.conns.List() {
		c.abort()
	}
}

// Active is the number of client connections open now (admitted, not
// yet ended).
func (s *Server) Active() int { return int(s.active.Load()) }

// refuse counts a connection refused for reason in snap's table.
func refuse(snap *frontdoor.Snapshot, reason string) {
	if snap.Conns != nil {
		snap.Conns.Refuse(reason)
	}
}
