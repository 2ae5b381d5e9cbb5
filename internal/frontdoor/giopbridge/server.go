package giopbridge

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopconn"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
)

// Orderer orders one request in the group's log and returns the first
// reply a replica gave to it: what the bridge needs of *replhub.Hub.
type Orderer interface {
	Order(ctx context.Context, c replhub.Call) (replhub.Reply, error)
}

// DefaultMaxInflight bounds the calls of one client connection being
// ordered at once unless Options.MaxInflight says otherwise; the bridge
// stops reading the connection while it is reached.
const DefaultMaxInflight = 64

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("giopbridge: server closed")

// Options configure a Server. The zero value is usable.
type Options struct {
	// Key is the group's object key (its name): requests and
	// LocateRequests for another key get OBJECT_NOT_EXIST and
	// UNKNOWN_OBJECT. Empty: every key is the group's.
	Key []byte
	// MaxMessageSize bounds a client's message, header excluded; default
	// registry.DefaultGIOPMaxMessageSize (16 MiB). The group's
	// max_payload, which the Orderer enforces, bounds the ordered request.
	MaxMessageSize int
	// MaxBufferedBytes bounds what the half-read messages of all client
	// connections hold together; default
	// registry.DefaultGIOPMaxBufferedBytes.
	MaxBufferedBytes int
	// IdleTimeout closes a connection (with CloseConnection) silent for
	// that long with no call in flight; default
	// registry.DefaultIdleTimeout.
	IdleTimeout time.Duration
	// RequestTimeout bounds reading a message once it began, and waiting
	// for an ordered call's reply (then TIMEOUT, COMPLETED_MAYBE); default
	// registry.DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxInflight bounds the calls of one connection ordered at once;
	// default DefaultMaxInflight.
	MaxInflight int
	// Now stamps each ordered request's time; time.Now when nil.
	Now func() time.Time
	// Seed draws each ordered request's seed; math/rand/v2's Uint64 when
	// nil.
	Seed func() uint64
	// Logger receives the bridge's log lines; slog.Default() when nil.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = registry.DefaultGIOPMaxMessageSize
	}
	if o.MaxBufferedBytes <= 0 {
		o.MaxBufferedBytes = registry.DefaultGIOPMaxBufferedBytes
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = registry.DefaultIdleTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = registry.DefaultRequestTimeout
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Seed == nil {
		o.Seed = rand.Uint64
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Server is the GIOP bridge of one replicated group. Safe for concurrent
// use.
type Server struct {
	o      Orderer
	opts   Options
	log    *slog.Logger
	budget *wire.Budget

	conns acceptloop.Conns[*clientConn]
	// ctx is the calls' context: cancelled by Close, and by Shutdown
	// once every connection is closed.
	ctx    context.Context
	cancel context.CancelFunc
	// calls are the calls being ordered, which may outlive their
	// connection.
	calls sync.WaitGroup
}

// New returns the bridge ordering its clients' requests through o.
func New(o Orderer, opts Options) *Server {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{o: o, opts: opts, log: opts.Logger, budget: wire.NewBudget(opts.MaxBufferedBytes),
		ctx: ctx, cancel: cancel}
}

// Serve accepts connections on ln and serves them until Shutdown or Close,
// then returns ErrServerClosed. Temporary accept errors are retried with a
// back-off (package acceptloop); any other accept error ends Serve and is
// returned.
func (s *Server) Serve(ln net.Listener) error {
	return s.conns.Serve(ln, func(nc net.Conn) *clientConn { return newClientConn(s, nc) }, (*clientConn).serve,
		acceptloop.Options{Logger: s.log, Name: "giop bridge", Closed: ErrServerClosed})
}

// Shutdown stops accepting connections and closes each client connection
// as soon as it has no call in flight, with a CloseConnection first (the
// client ORB may reissue what was not answered: nothing unanswered was
// read after it). It returns when every connection is closed, or, when
// ctx ends first, closes what is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	err := giopconn.Drain(ctx, &s.conns)
	s.cancel()
	s.calls.Wait()
	return err
}

// Close closes the listeners and every connection at once; calls being
// ordered are abandoned (what was appended stays in the log and runs on
// the replicas). It returns once the Orderer has returned every call.
func (s *Server) Close() error {
	s.conns.Close()
	s.cancel()
	giopconn.AbortAll(&s.conns)
	s.conns.Wait()
	s.calls.Wait()
	return nil
}
