package bridge

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Orderer is what the bridge needs of its group's hub; *replhub.Hub
// implements it.
type Orderer interface {
	// Order appends c to the group's log and waits for the first reply,
	// until ctx ends (replhub.Hub.Order, whose errors the bridge maps).
	Order(ctx context.Context, c replhub.Call) (replhub.Reply, error)
	// LastWrite is the position of session's last ordered request (0:
	// none).
	LastWrite(session string) uint64
	// AppliedBy is the last position replica reported applied (0: none).
	AppliedBy(replica string) uint64
}

var _ Orderer = (*replhub.Hub)(nil)

// deadlineGrace is how long after the request timeout a connection's
// read and write deadlines fall: time to answer 504.
const deadlineGrace = time.Second

// MaxHeaderBytes bounds a request's head, as httpdoor's.
const MaxHeaderBytes = httpdoor.MaxHeaderBytes

// Options configure a Server. The zero value is usable.
type Options struct {
	// Logger receives the bridge's own log lines; slog.Default() when nil.
	Logger *slog.Logger
	// AccessLog, when not nil, receives one line per request, in
	// httpdoor's format (replica: the replica whose reply the client got,
	// or the one a read-only call went to). Writes are serialised.
	AccessLog io.Writer
	// AccessLogJSON writes the access log's lines as JSON objects.
	AccessLogJSON bool
	// Now is the clock of the ordered requests' time stamps
	// (Fulcrum-Time), of the access log and of the latencies reported to
	// Group.Observe; time.Now when nil. Deadlines and timeouts run on the
	// real clock.
	Now func() time.Time
	// Seed draws an ordered request's seed (Fulcrum-Seed); crypto/rand
	// when nil.
	Seed func() uint64
	// Dial opens connections to replicas for read-only calls; a
	// net.Dialer's when nil. The connect timeout bounds it through ctx.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ReplicaTLS, when not nil, is read at every TLS connection to an
	// https:// replica (read-only calls): it verifies the replica and gives
	// the client certificate (the group's replica_tls). Nil: the system
	// roots.
	ReplicaTLS func() *certs.Client
	// TLS, when not nil, terminates TLS on every connection; it must offer
	// ALPN (httpdoor.ALPN). SetTLS changes it.
	TLS *tls.Config
}

// Server is the bridge of one replicated group: an http.Handler, and a
// server of listeners (Serve, Shutdown, Close). Server-level timeouts
// (request heads, idle connections) are those of the snapshot current at
// New; the group's max_payload, read_only patterns and request timeout
// are read per request. Safe for concurrent use.
type Server struct {
	g    frontdoor.Group
	hub  Orderer
	log  *slog.Logger
	now  func() time.Time
	seed func() uint64
	acc  lean.AccessLog

	srv   *http.Server
	proxy *httputil.ReverseProxy
	up    *http.Transport

	// base is the parent of every request context; cancelled by Close and
	// by a Shutdown that runs out of time.
	base       context.Context
	cancelBase context.CancelFunc

	// routes are the compiled read_only patterns (readonly.go).
	routes atomic.Pointer[routes]
	// spill rotates where the in-flight limit's fall-back scan starts.
	spill atomic.Uint32
	// tlsConf terminates TLS on new connections (nil: plain; tls.go).
	tlsConf atomic.Pointer[tls.Config]
}

// New returns the bridge of g, ordering through hub.
func New(g frontdoor.Group, hub Orderer, opts Options) *Server {
	s := &Server{g: g, hub: hub, log: opts.Logger, now: opts.Now, seed: opts.Seed}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.seed == nil {
		s.seed = cryptoSeed
	}
	if opts.AccessLog != nil {
		s.acc = httpdoor.NewAccessLog(opts.AccessLog, opts.AccessLogJSON)
	}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.tlsConf.Store(opts.TLS)

	var to frontdoor.Timeouts
	if snap := g.Snapshot(); snap != nil {
		to = frontdoor.TimeoutsOf(snap.Timeouts)
	} else {
		to = frontdoor.TimeoutsOf(protocol.Timeouts{})
	}
	s.up = newTransport(opts.Dial, opts.ReplicaTLS)
	s.proxy = s.newProxy(s.up) // readonly.go

	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	protos.SetHTTP2(true) // h2 negotiated by ALPN over TLS
	s.srv = &http.Server{
		Handler:           s,
		Protocols:         protos,
		ReadHeaderTimeout: to.Request,
		// A request's body and its answer are bounded by the request
		// timeout (the context of its call) and, as a backstop against a
		// client that stalls, by these deadlines a little later.
		ReadTimeout:    to.Request + deadlineGrace,
		WriteTimeout:   to.Request + deadlineGrace,
		IdleTimeout:    to.Idle,
		MaxHeaderBytes: MaxHeaderBytes,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return withConnSession(ctx) // session.go
		},
		BaseContext: func(net.Listener) context.Context { return s.base },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.srv.DisableGeneralOptionsHandler = true
	return s
}

// Serve accepts connections on ln and serves them until Shutdown or Close;
// it then returns http.ErrServerClosed, any other error otherwise.
// HTTP/1.1 and HTTP/2 with prior knowledge (h2c) are both served on ln,
// and h2 over TLS when the bridge terminates TLS.
func (s *Server) Serve(ln net.Listener) error {
	return s.srv.Serve(&tlsListener{Listener: ln, s: s})
}

// CloseIdleUpstream closes the idle connections of read-only calls to
// replicas: the next calls dial afresh, with the Options.ReplicaTLS client
// then in use (as httpdoor.Server's).
func (s *Server) CloseIdleUpstream() { s.up.CloseIdleConnections() }

// Shutdown stops accepting connections, closes idle ones and waits for
// the calls in flight to finish. When ctx ends first it closes everything
// still open and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.cancelBase()
		_ = s.srv.Close()
	}
	s.up.CloseIdleConnections()
	return err
}

// Close closes the listeners and every connection at once, aborting calls
// in flight.
func (s *Server) Close() error {
	s.cancelBase()
	err := s.srv.Close()
	s.up.CloseIdleConnections()
	return err
}

// ServeHTTP serves one request from the group's current snapshot: a
// read-only call is proxied to a replica that caught up with the
// session's last write, any other is ordered.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var lw *httpdoor.LogWriter
	if s.acc != nil {
		lw = httpdoor.NewLogWriter(w, s.now())
		w = lw
		defer s.writeAccess(lw, r)
	}
	snap := s.g.Snapshot()
	if snap == nil {
		writeError(w, r, nil, errNotReady)
		return
	}
	if err := checkRequest(r); err != nil {
		writeError(w, r, snap, err)
		return
	}
	if s.readOnly(snap, r) {
		s.serveReadOnly(w, r, snap, lw)
		return
	}
	s.serveOrdered(w, r, snap, lw)
}

// checkRequest rejects what the bridge cannot order: CONNECT, and targets
// that are not a path (OPTIONS *, the authority form). Absolute-form
// targets are ordered by their path and query.
func checkRequest(r *http.Request) error {
	if r.Method == http.MethodConnect {
		return errMethod
	}
	if p := r.URL.Path; (p != "" && p[0] != '/') || r.URL.Opaque != "" || (p == "" && r.URL.Host == "") {
		return errBadTarget
	}
	return nil
}

// cryptoSeed draws a seed from crypto/rand.
func cryptoSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return binary.LittleEndian.Uint64(b[:])
}
