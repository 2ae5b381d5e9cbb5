package httpdoor

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// MaxHeaderBytes bounds a request's head (request line and header
// fields); larger ones are answered 431 Request Header Fields Too Large
// (by the lean engine for a connection's first head, by net/http after).
const MaxHeaderBytes = lean.MaxHeaderBytes

// netHTTPHeaderSlop is what net/http reads beyond http.Server's
// MaxHeaderBytes before it answers 431 (its "bufio slop").
const netHTTPHeaderSlop = 4096

// Defaults used when the snapshot's Timeouts leave a field at zero (the
// same as registry.WithDefaults).
const (
	DefaultConnectTimeout = registry.DefaultConnectTimeout
	DefaultRequestTimeout = registry.DefaultRequestTimeout
	DefaultIdleTimeout    = registry.DefaultIdleTimeout
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Logger receives the front door's own log lines; slog.Default() when
	// nil.
	Logger *slog.Logger
	// AccessLog, when not nil, receives one line per request (see
	// accesslog.go for the format). Writes are serialised.
	AccessLog io.Writer
	// AccessLogJSON writes the access log's lines as JSON objects instead
	// of logfmt (config key log_format: json).
	AccessLogJSON bool
	// Now is the clock of the access log and of the latencies reported to
	// Group.Observe; time.Now when nil. Connection deadlines and timeouts
	// always run on the real clock.
	Now func() time.Time
	// Engine chooses what serves HTTP/1.1 connections: EngineLean (the
	// default, when empty) or EngineStdlib (net/http for every
	// connection).
	Engine string
	// Dial opens connections to members (both engines); a net.Dialer's
	// when nil. The call's connect timeout bounds it through ctx.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ReplicaTLS, when not nil, is read at every TLS connection to an
	// https:// member (after Dial): it verifies the member and gives the
	// client certificate (the group's replica_tls). Nil: the system roots.
	ReplicaTLS func() *certs.Client
	// TLS, when not nil, terminates TLS on every connection (tls.go); it
	// must offer ALPN. SetTLS changes it.
	TLS *tls.Config
}

// The HTTP/1 engines (config key http_engine).
const (
	// EngineLean serves plain HTTP/1.1 per-request calls on the lean
	// engine and hands the rest to net/http.
	EngineLean = "lean"
	// EngineStdlib serves every connection with net/http.
	EngineStdlib = "stdlib"
)

// Server is the HTTP front door of one group. Serve runs it on a listener
// with the group's timeouts: plain HTTP/1.1 per-request calls on the lean
// engine (package lean) unless Options.Engine is EngineStdlib, everything
// else through net/http and ServeHTTP — it is an http.Handler too. Safe
// for concurrent use.
type Server struct {
	g   frontdoor.Group
	log *slog.Logger
	now func() time.Time
	acc *accessLog

	srv   *http.Server
	proxy *httputil.ReverseProxy
	up    *upstream

	// base is the parent of every request context; cancelled when a
	// Shutdown runs out of time, which aborts upgraded connections.
	base       context.Context
	cancelBase context.CancelFunc

	calls tracker
	// spill rotates where the in-flight limit's fall-back scan starts.
	spill atomic.Uint32

	// to are the server-level timeouts: reading a request head, idle
	// keep-alive connections.
	to frontdoor.Timeouts
	// lean serves HTTP/1.1 connections first (nil: EngineStdlib).
	lean *lean.Engine
	// handoff is srv's listener: every connection, or, with the lean
	// engine, those it hands over.
	handoff  *handoff
	fallback sync.Once

	mu         sync.Mutex
	listeners  map[*net.Listener]struct{}
	inShutdown atomic.Bool
	// handedOver counts the connections the lean engine gave to net/http.
	handedOver atomic.Int64
	// tlsConf terminates TLS on new connections (nil: plain; tls.go).
	tlsConf atomic.Pointer[tls.Config]
	// handshakes are the connections in their TLS handshake; guarded by
	// mu.
	handshakes map[net.Conn]struct{}
}

// New returns the front door of g. Server-level timeouts (reading request
// headers, idle keep-alive connections) are taken from the snapshot current
// at New; the connect and request timeouts are read per request.
func New(g frontdoor.Group, opts Options) *Server {
	s := &Server{g: g, log: opts.Logger, now: opts.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if opts.AccessLog != nil {
		s.acc = &accessLog{w: opts.AccessLog, json: opts.AccessLogJSON}
	}
	s.base, s.cancelBase = context.WithCancel(context.Background())

	var t protocol.Timeouts
	if snap := g.Snapshot(); snap != nil {
		t = snap.Timeouts
	}
	to := frontdoor.TimeoutsOf(t)
	s.to = to
	s.handoff = newHandoff()
	s.listeners = map[*net.Listener]struct{}{}
	s.tlsConf.Store(opts.TLS)

	s.up = newUpstream(s, opts.Dial, opts.ReplicaTLS)
	if opts.Engine != EngineStdlib {
		cfg := lean.Config{Group: g, Members: s.up.fast, Answer: errorAnswer, Log: s.log, Now: s.now, Timeouts: to, Via: viaName}
		if s.acc != nil {
			cfg.Access = s.acc
		}
		s.lean = lean.New(cfg)
	}
	s.proxy = &httputil.ReverseProxy{
		Rewrite:      s.rewrite,
		Transport:    s.up,
		ErrorHandler: s.proxyError,
		// Without a pool ReverseProxy allocates a 32 KiB copy buffer for
		// every call: a fifth of the front door's CPU went to allocating,
		// clearing and collecting them (fulcrum bench overhead --profile).
		BufferPool: &copyBuffers{},
		ErrorLog:   slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		// Responses of unknown length (gRPC, chunked streams) and
		// text/event-stream are flushed at once by ReverseProxy itself;
		// others are buffered and flushed when the handler ends.
		FlushInterval: 0,
	}

	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	protos.SetHTTP2(true) // h2 negotiated by ALPN (tls.go)
	s.srv = &http.Server{
		Handler:           s,
		Protocols:         protos,
		ReadHeaderTimeout: to.Request,
		// Writes are bounded per call: WriteTimeout is re-armed for each
		// request and lifted (ResponseController) for streaming calls.
		WriteTimeout: to.Request,
		IdleTimeout:  to.Idle,
		// net/http refuses a head once it has read MaxHeaderBytes +
		// netHTTPHeaderSlop bytes without its end: this makes
		// MaxHeaderBytes the bound of an HTTP/1 head it reads itself
		// (the lean path bounds the first head of a connection, of
		// which net/http reads up to 4 KiB uncounted when it looks for
		// the HTTP/2 preface). HTTP/2 bounds its header list, HPACK sizes
		// with 32 bytes a field, at this MaxHeaderBytes plus 320.
		MaxHeaderBytes: MaxHeaderBytes - netHTTPHeaderSlop,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return withTLSState(withGuard(ctx, c), c) // tls.go
		},
		BaseContext: func(net.Listener) context.Context { return s.base },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	// ServeHTTP answers OPTIONS * as net/http would, and judges its
	// framing (lean.Guard needs every request to reach the handler).
	s.srv.DisableGeneralOptionsHandler = true
	return s
}

// CloseIdleUpstream closes the idle connections to members: the next calls
// dial afresh, with the Options.ReplicaTLS client then in use. Connections
// in use finish their calls.
func (s *Server) CloseIdleUpstream() { s.up.closeIdle() }

// Shutdown stops accepting connections, closes idle ones and waits for the
// calls in flight (including upgraded connections) to finish. When ctx ends
// first it closes everything still open and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.inShutdown.Store(true)
	s.closeListenersLocked()
	s.mu.Unlock()
	var leanDone chan error
	if s.lean != nil {
		leanDone = make(chan error, 1)
		go func() { leanDone <- s.lean.Shutdown(ctx) }()
	}
	err := s.srv.Shutdown(ctx)
	if leanDone != nil {
		// Connections the lean engine hands over while net/http shuts
		// down are refused by the closed handoff, and closed.
		if lerr := <-leanDone; err == nil {
			err = lerr
		}
	}
	_ = s.handoff.Close()
	if err == nil {
		// http.Server does not wait for hijacked (upgraded) connections.
		err = s.calls.wait(ctx)
	}
	if err != nil {
		s.forceClose()
	}
	s.up.closeIdle()
	return err
}

// Close closes the listeners and every connection at once, aborting calls
// in flight.
func (s *Server) Close() error {
	s.mu.Lock()
	s.inShutdown.Store(true)
	s.closeListenersLocked()
	s.mu.Unlock()
	err := s.forceClose()
	s.up.closeIdle()
	return err
}

// forceClose aborts everything still open.
func (s *Server) forceClose() error {
	s.cancelBase()
	err := s.srv.Close()
	_ = s.handoff.Close()
	if s.lean != nil {
		s.lean.Close()
	}
	return err
}

// ServeHTTP serves one request to the front door from the group's current
// snapshot.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.enter()
	defer s.calls.leave()
	r = withTLS(r)

	var lw *LogWriter
	if s.acc != nil {
		lw = NewLogWriter(w, s.now())
		w = lw
		defer s.acc.write(lw, r, s.now)
	}

	var done bool
	if w, done = s.judgeFraming(w, r); done {
		return
	}
	if r.Method == http.MethodOptions && r.RequestURI == "*" {
		serveOptionsAsterisk(w, r)
		return
	}
	snap := s.g.Snapshot()
	if snap == nil {
		s.writeError(w, r, nil, errNotReady)
		return
	}
	if err := checkRequest(r); err != nil {
		s.writeError(w, r, snap, err)
		return
	}
	if snap.Binding == protocol.PerRequest {
		s.serveProxy(w, r, snap, lw)
		return
	}
	s.serveRedirect(w, r, snap, lw)
}

// Serve accepts connections on ln and serves them until Shutdown. It
// returns http.ErrServerClosed after Shutdown, any other error otherwise.
// HTTP/1.1 and HTTP/2 with prior knowledge (h2c) are both served on ln.
func (s *Server) Serve(ln net.Listener) error {
	if !s.trackListener(&ln, true) {
		return http.ErrServerClosed
	}
	defer s.trackListener(&ln, false)
	s.fallback.Do(func() { go func() { _ = s.srv.Serve(s.handoff) }() })
	err := acceptloop.Serve(ln, func(nc net.Conn) error {
		if conf := s.tlsConf.Load(); conf != nil {
			go s.serveTLS(nc, conf)
			return nil
		}
		if s.lean == nil {
			if !s.handoff.give(nc) {
				_ = nc.Close()
			}
			return nil
		}
		go s.serveConn(nc)
		return nil
	}, acceptloop.Options{Logger: s.log, Name: "http front door"})
	if s.inShutdown.Load() {
		return http.ErrServerClosed
	}
	return err
}

// serveConn serves one client connection on the lean engine until it
// hands the connection over, then on net/http.
func (s *Server) serveConn(nc net.Conn) {
	if nc = s.lean.Serve(nc); nc == nil {
		return
	}
	s.handedOver.Add(1)
	if !s.handoff.give(nc) {
		_ = nc.Close()
	}
}

// trackListener adds or removes ln; adding fails once shutting down.
func (s *Server) trackListener(ln *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.listeners, ln)
		return true
	}
	if s.inShutdown.Load() {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

// closeListenersLocked closes the listeners. Caller must hold s.mu.
func (s *Server) closeListenersLocked() {
	for ln := range s.listeners {
		_ = (*ln).Close()
	}
	s.closeHandshakesLocked() // tls.go
}

// checkRequest rejects what no binding mode can serve: CONNECT, and
// targets that are not a path (OPTIONS *, the authority form "host:80",
// which net/http reads as an opaque URI). Absolute-form targets are served
// by their path.
func checkRequest(r *http.Request) error {
	if r.Method == http.MethodConnect {
		return errMethod
	}
	if p := r.URL.Path; (p != "" && p[0] != '/') || r.URL.Opaque != "" || (p == "" && r.URL.Host == "") {
		return errBadTarget
	}
	return nil
}

// tracker counts the requests being served so that Shutdown can wait for
// upgraded connections, which http.Server forgets once hijacked. enter and
// leave are lock-free; wait may be called concurrently with them.
type tracker struct {
	n        atomic.Int64
	draining atomic.Bool
	once     sync.Once
	zero     chan struct{}
}

func (t *tracker) init() { t.once.Do(func() { t.zero = make(chan struct{}, 1) }) }

func (t *tracker) enter() { t.n.Add(1) }

func (t *tracker) leave() {
	if t.n.Add(-1) == 0 && t.draining.Load() {
		t.init()
		select {
		case t.zero <- struct{}{}:
		default:
		}
	}
}

// wait returns when no request is being served, or ctx's error.
func (t *tracker) wait(ctx context.Context) error {
	t.init()
	t.draining.Store(true)
	for t.n.Load() != 0 {
		select {
		case <-t.zero:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

var errNotReady = errors.New("httpdoor: group has no snapshot yet")

// copyBuffers lends ReverseProxy the buffers it copies response bodies
// through. Safe for concurrent use.
type copyBuffers struct{ p sync.Pool }

// copyBufferSize is ReverseProxy's own default.
const copyBufferSize = 32 << 10

func (b *copyBuffers) Get() []byte {
	if buf, ok := b.p.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, copyBufferSize)
}

func (b *copyBuffers) Put(buf []byte) {
	if cap(buf) == copyBufferSize {
		buf = buf[:copyBufferSize]
		b.p.Put(&buf)
	}
}
