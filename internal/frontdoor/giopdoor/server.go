package giopdoor

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopconn"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
)

// Defaults used when the snapshot's Timeouts or GIOP settings leave a field
// at zero (the same as registry.WithDefaults).
const (
	DefaultConnectTimeout = registry.DefaultConnectTimeout
	DefaultRequestTimeout = registry.DefaultRequestTimeout
	DefaultIdleTimeout    = registry.DefaultIdleTimeout
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("giopdoor: server closed")

// Options configure a Server. The zero value is usable.
type Options struct {
	// Logger receives the front door's own log lines; slog.Default() when
	// nil.
	Logger *slog.Logger
	// Now is the clock of the latencies reported to Group.Observe;
	// time.Now when nil. Deadlines always run on the real clock.
	Now func() time.Time
	// Dial opens the connections to members; a net.Dialer's when nil.
	// Each dial is bounded by the group's connect timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Server is the GIOP front door of one group. Safe for concurrent use.
type Server struct {
	g    frontdoor.Group
	log  *slog.Logger
	now  func() time.Time
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	up *upstreams
	// budget bounds what the half-read messages of all client connections
	// hold together (giop.max_buffered_bytes).
	budget *wire.Budget
	// spill rotates where the in-flight limit's fall-back scan starts.
	spill atomic.Uint32

	// conns are the listeners and client connections.
	conns acceptloop.Conns[*clientConn]
	// done is closed when the server shuts down; pending calls end.
	done     chan struct{}
	doneOnce sync.Once
}

// New returns the GIOP front door of g.
func New(g frontdoor.Group, opts Options) *Server {
	s := &Server{g: g, log: opts.Logger, now: opts.Now, done: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.dial = opts.Dial
	if s.dial == nil {
		s.dial = (&net.Dialer{}).DialContext
	}
	s.up = newUpstreams(s)
	s.budget = wire.NewBudget(maxBufferedBytes(g.Snapshot()))
	return s
}

// Serve accepts connections on ln and serves them until Shutdown or Close,
// then returns ErrServerClosed. Temporary accept errors (out of file
// descriptors, say) are retried with a back-off (see package acceptloop);
// any other accept error ends Serve and is returned.
func (s *Server) Serve(ln net.Listener) error {
	return s.conns.Serve(ln, func(nc net.Conn) *clientConn { return newClientConn(s, nc) }, (*clientConn).serve,
		acceptloop.Options{Logger: s.log, Name: "giop front door", Closed: ErrServerClosed})
}

// Shutdown stops accepting connections and closes each client connection
// as soon as it has no call in flight, with a CloseConnection message first
// (which tells the client ORB that it may safely reissue anything not yet
// answered). It returns when every connection is closed, or, when ctx ends
// first, closes what is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	err := giopconn.Drain(ctx, &s.conns)
	s.doneOnce.Do(func() { close(s.done) })
	s.up.closeAll()
	return err
}

// Close closes the listeners and every connection at once, failing calls
// in flight.
func (s *Server) Close() error {
	s.conns.Close()
	giopconn.AbortAll(&s.conns)
	s.doneOnce.Do(func() { close(s.done) })
	s.conns.Wait()
	s.up.closeAll()
	return nil
}

// maxBufferedBytes is the snapshot's bound on what half-read messages may
// hold together.
func maxBufferedBytes(snap *frontdoor.Snapshot) int {
	if snap == nil || snap.GIOP.MaxBufferedBytes <= 0 {
		return registry.DefaultGIOPMaxBufferedBytes
	}
	return snap.GIOP.MaxBufferedBytes
}

// maxMessageSize is the snapshot's GIOP message size limit.
func maxMessageSize(snap *frontdoor.Snapshot) int {
	if snap == nil || snap.GIOP.MaxMessageSize <= 0 {
		return registry.DefaultGIOPMaxMessageSize
	}
	return snap.GIOP.MaxMessageSize
}
