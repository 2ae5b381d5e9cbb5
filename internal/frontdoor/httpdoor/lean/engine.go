package lean

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// MaxHeaderBytes bounds a request's head (request line and header
// fields); larger ones are answered 431 Request Header Fields Too Large.
const MaxHeaderBytes = 64 << 10

// Config is what the engine needs of the front door it serves. Group,
// Members and Answer are required.
type Config struct {
	// Group is the group served: its snapshot, and the balancer told of
	// every attempt's outcome.
	Group frontdoor.Group
	// Members sends the calls; shared with the front door's net/http path
	// so that both use one pool of member connections.
	Members *MemberClient
	// Answer renders the front door's own answer to err (an error of
	// frontdoor's pick, a *frontdoor.UnreachableError,
	// frontdoor.ErrCallTimeout, frontdoor.ErrLoop, a *BadRequestError, or
	// a failure of the call). snap is the call's snapshot.
	Answer func(snap *frontdoor.Snapshot, err error) Answer
	// Log receives the engine's own log lines; slog.Default() when nil.
	Log *slog.Logger
	// Access, when not nil, receives one entry per request.
	Access AccessLog
	// Now is the clock of the access log and of the latencies observed;
	// time.Now when nil. Deadlines always run on the real clock.
	Now func() time.Time
	// Via is the name this balancer gives itself in Via fields (the
	// received-by of RFC 9110 §7.6.3, e.g. "fulcrum-<id>"): added to every
	// request forwarded, and a request that already names it is answered
	// frontdoor.ErrLoop, not forwarded. "" turns the guard off.
	Via string
	// Timeouts are the server-level bounds: Request bounds reading a
	// request head, Idle an idle keep-alive connection. A call's own
	// bounds come from its snapshot.
	Timeouts frontdoor.Timeouts
}

// Answer is an answer of the front door itself: its status, its group
// and its body (JSON).
type Answer struct {
	Status int
	Group  string
	Body   []byte
}

// BadRequestError is a request the engine cannot read: answered Status
// (400 when 0; 431 for a head over MaxHeaderBytes) with Message.
type BadRequestError struct {
	Status  int
	Message string
}

func (e *BadRequestError) Error() string { return e.Message }

// AccessLog takes the engine's access log entries. Implementations are
// safe for concurrent use.
type AccessLog interface {
	// WriteEntry logs e, a request that ended at end.
	WriteEntry(e *Entry, end time.Time)
}

// Entry is what one access log line says of a request.
type Entry struct {
	Start                         time.Time
	Client, Method, Target, Proto string
	Status                        int
	Replica                       string
	Bytes                         int64
}

// Engine is the lean HTTP/1 engine of one front door: it serves plain
// HTTP/1.1 requests of a per-request group, each client connection on
// the goroutine that calls Serve, and gives back to the caller, for
// net/http, every connection at a request it does not serve. Safe for
// concurrent use.
type Engine struct {
	g       frontdoor.Group
	members *MemberClient
	answer  func(*frontdoor.Snapshot, error) Answer
	log     *slog.Logger
	acc     AccessLog
	now     func() time.Time
	to      frontdoor.Timeouts
	via     string

	// spill rotates where the in-flight limit's fall-back scan starts.
	spill atomic.Uint32

	mu         sync.Mutex
	conns      map[*conn]struct{}
	inShutdown atomic.Bool
	closed     atomic.Bool
	drained    chan struct{}
	drainOnce  sync.Once
}

// New returns an engine serving under cfg.
func New(cfg Config) *Engine {
	s := &Engine{g: cfg.Group, members: cfg.Members, answer: cfg.Answer, log: cfg.Log, acc: cfg.Access,
		now: cfg.Now, to: cfg.Timeouts, via: cfg.Via,
		conns: map[*conn]struct{}{}, drained: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// acquire is snap.AcquireWait with the engine's rotating spill.
func (s *Engine) acquire(snap *frontdoor.Snapshot, req *strategy.Request, exclude []*frontdoor.Member, client frontdoor.Client) (*frontdoor.Member, error) {
	return snap.AcquireWait(req, exclude, s.spill.Add(1), client)
}
