package httpdoor

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// deadlineGrace is how long after the request timeout a proxied call's
// connection deadlines fall.
const deadlineGrace = time.Second

// call is the state of one proxied call, shared by the handler, the
// Rewrite hook, the upstream RoundTripper and the dialer through the
// request context. All but the dialer run on the handler's goroutine.
type call struct {
	s    *Server
	snap *frontdoor.Snapshot
	in   *url.URL
	req  strategy.Request
	to   frontdoor.Timeouts
	lw   *LogWriter
	rc   *http.ResponseController

	// m is the member the call is (to be) sent to; its Live.Inflight
	// counts this call while m is not nil.
	m *frontdoor.Member
	// hold is the call's hold on m's slot; answered: m's last answer was
	// not a failure.
	hold     frontdoor.Hold
	answered bool
	// tried are the members whose dial failed.
	tried []*frontdoor.Member
	// aff is the group's session table (nil: no affinity rules), dec its
	// decision for the call (in), and pinned says the call goes to
	// dec's replica only (docs/affinity.md).
	aff    lean.Affinity
	dec    frontdoor.AffinityDecision
	inReq  *http.Request
	pinned bool
	// h2c sends the call upstream over HTTP/2 (h2c for http:// members).
	h2c bool
	// body guards the request body to tell whether it was read (set by
	// rewrite, read by the timer too).
	body atomic.Pointer[bodyGuard]
	// timer bounds the call (or, for streaming calls, the wait for the
	// response headers).
	timer    *time.Timer
	upgraded bool
	// timerMu orders the timer's action against stopTimer, so that a timer
	// firing as the handler returns does not touch the connection after.
	timerMu  sync.Mutex
	finished bool
}

type callKey struct{}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// serveProxy forwards one call (per-request binding).
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request, snap *frontdoor.Snapshot, lw *LogWriter) {
	if looped(r) {
		s.writeError(w, r, snap, frontdoor.ErrLoop)
		return
	}
	c := &call{s: s, snap: snap, in: r.URL, to: frontdoor.TimeoutsOf(snap.Timeouts), lw: lw}
	c.req.Client = r.Header.Get(protocol.HeaderClient)
	c.req.Key = requestKey(snap.Key, r)
	requestFacts(r, &c.req)
	var m *frontdoor.Member
	var err error
	if aff, ok := lean.AffinityOf(snap); ok {
		c.aff, c.inReq = aff, r
		c.dec = aff.RouteHTTP(r)
		m, c.pinned, err = lean.AcquireAffinity(snap, c.dec)
	}
	if !c.pinned {
		m, err = s.acquire(snap, &c.req, nil, frontdoor.Client{Done: r.Context().Done()})
	}
	if err != nil {
		if r.Context().Err() != nil {
			// The client went away while the call waited in the queue.
			if lw != nil {
				lw.status = statusClientClosed
			}
			return
		}
		s.writeError(w, r, snap, err)
		return
	}
	c.take(m)
	defer c.release()

	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	c.rc = http.NewResponseController(w)
	grpc := isGRPC(r)
	c.h2c = r.ProtoMajor == 2 && (grpc || wantsTrailers(r))
	switch {
	case grpc:
		// gRPC streams may last; gRPC carries its own deadlines
		// (grpc-timeout) and cancellations (RST_STREAM).
		_ = c.rc.SetWriteDeadline(time.Time{})
	case isUpgrade(r):
		// Bounded until the 101 arrives, then the connection is the
		// client's for as long as it wants it.
		_ = c.rc.SetWriteDeadline(time.Time{})
		c.timer = time.AfterFunc(c.to.Request, func() { cancel(frontdoor.ErrCallTimeout) })
	default:
		// The timer ends the call; the connection deadlines, a little
		// later, are the backstop that frees the connection from a client
		// that stalls, and leave time to answer 504. Deadlines are on the
		// real clock, whatever Options.Now says.
		deadline := time.Now().Add(c.to.Request + deadlineGrace)
		_ = c.rc.SetReadDeadline(deadline)
		_ = c.rc.SetWriteDeadline(deadline)
		c.timer = time.AfterFunc(c.to.Request, func() {
			c.timerMu.Lock()
			defer c.timerMu.Unlock()
			if c.finished {
				return
			}
			c.body.Load().timedOut()
			cancel(frontdoor.ErrCallTimeout)
			// A client stalled in its body blocks the upstream send, and
			// with it the 504: end the read now, not at the backstop.
			_ = c.rc.SetReadDeadline(time.Now())
		})
	}
	defer c.stopTimer()

	s.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, callKey{}, c)))

	if lw != nil {
		if c.m != nil {
			lw.replica = c.m.ID()
		}
		if c.upgraded && lw.status == 0 {
			lw.status = http.StatusSwitchingProtocols
		}
	}
}

// rewrite points the outbound request at the call's member.
func (s *Server) rewrite(pr *httputil.ProxyRequest) {
	c := callFrom(pr.In.Context())
	u, err := targetURL(c.m, pr.In.URL)
	if err != nil {
		// Leave a URL the transport refuses; RoundTrip reports err.
		u = &url.URL{}
	}
	pr.Out.URL = u
	pr.Out.Host = ""
	// Append the client to the X-Forwarded-For chain it came with.
	if prior := pr.In.Header["X-Forwarded-For"]; len(prior) > 0 {
		pr.Out.Header["X-Forwarded-For"] = prior
	}
	pr.SetXForwarded()
	pr.Out.Header.Add("Via", viaOf(pr.In))
	if pr.Out.Body != nil {
		g := &bodyGuard{rc: pr.Out.Body}
		c.body.Store(g)
		pr.Out.Body = g
		// Lets the transport resend a call on a fresh connection when a
		// kept-alive one turned out dead before anything was written.
		pr.Out.GetBody = func() (io.ReadCloser, error) {
			if g.wasRead() {
				return nil, errBodyRead
			}
			return g, nil
		}
	}
}

// proxyError answers a call that got no response from a replica.
func (s *Server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	c := callFrom(ctx)
	var snap *frontdoor.Snapshot
	if c != nil {
		snap = c.snap
	}
	switch {
	case errors.Is(context.Cause(ctx), frontdoor.ErrCallTimeout):
		err = frontdoor.ErrCallTimeout
	case ctx.Err() != nil:
		// The client went away (or a forced shutdown): nobody to answer.
		if c != nil && c.lw != nil {
			c.lw.status = statusClientClosed
		}
		return
	}
	replica := ""
	if c != nil && c.m != nil {
		replica = c.m.ID()
	}
	s.log.Warn("proxied call failed", "replica", replica, "method", r.Method, "path", r.URL.Path, "err", err)
	s.writeError(w, r, snap, err)
}

// statusClientClosed is logged for calls whose client went away before an
// answer (nginx's 499).
const statusClientClosed = lean.StatusClientClosed

// acquire is snap.AcquireWait with the server's rotating spill: when every
// member is full it waits in the group's queue, if it has one, until a
// member has room, the queue's timeout, or client goes away.
func (s *Server) acquire(snap *frontdoor.Snapshot, req *strategy.Request, exclude []*frontdoor.Member, client frontdoor.Client) (*frontdoor.Member, error) {
	return snap.AcquireWait(req, exclude, s.spill.Add(1), client)
}

// take makes m, which Acquire counted the call on, the call's member.
func (c *call) take(m *frontdoor.Member) {
	c.m, c.answered = m, false
	c.hold = m.Hold(c.req.Cost, c.snap.MaxInflight)
}

// release uncounts the call from its member.
func (c *call) release() {
	if c.m != nil {
		c.hold.End(c.answered)
		c.m, c.hold = nil, frontdoor.Hold{}
	}
}

func (c *call) stopTimer() {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	c.finished = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// observe reports one attempt's outcome to the balancer and the strategy.
func (c *call) observe(m *frontdoor.Member, latency time.Duration, failed bool) {
	c.answered = !failed
	c.s.g.Observe(m, latency, failed)
	if c.snap.Observer != nil {
		c.snap.Observer.Observe(m.Replica, latency, failed)
	}
}

// responded adapts the call's bounds to its response: an upgraded
// connection or an event stream is no longer bounded by the request
// timeout. (ReverseProxy itself flushes the headers and each write of a
// response of unknown length or an event stream at once.)
func (c *call) responded(res *http.Response) {
	if c.aff != nil {
		// Before the client sees the answer: once it holds a Location or
		// a cookie, the object's entry exists (in cluster mode, in etcd).
		c.aff.Answered(c.inReq, c.dec, c.m.ID(), res.StatusCode, res.Header)
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		c.upgraded = true
		c.stopTimer()
		return
	}
	if isEventStream(res.Header.Get("Content-Type")) {
		c.stopTimer()
		_ = c.rc.SetReadDeadline(time.Time{})
		_ = c.rc.SetWriteDeadline(time.Time{})
	}
}

func isEventStream(ct string) bool {
	const es = "text/event-stream"
	return len(ct) >= len(es) && strings.EqualFold(ct[:len(es)], es)
}

func isGRPC(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}

func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && headerHasToken(r.Header["Connection"], "upgrade")
}

func wantsTrailers(r *http.Request) bool { return headerHasToken(r.Header["Te"], "trailers") }

// headerHasToken reports whether a comma-separated header contains token,
// case-insensitively.
func headerHasToken(values []string, token string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}
