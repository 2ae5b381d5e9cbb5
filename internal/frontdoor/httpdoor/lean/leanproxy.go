package lean

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// callResult says what a connection does after a lean call.
type callResult uint8

const (
	callNext     callResult = iota // read the next request
	callClose                      // close the connection
	callHandOver                   // give the connection to net/http
)

// errClientGone: the client closed or reset its connection during the
// call (or the front door was closed). Nobody is left to answer.
var errClientGone = errors.New("lean: the client went away")

// deadlineGrace is how long after the request timeout a call's
// connection deadlines fall: time to answer 504.
const deadlineGrace = time.Second

// errClientTimeout: the request timeout passed while the client was still
// sending its request's body. Answered 504 like any timeout, but never the
// member's failure.
var errClientTimeout = fmt.Errorf("lean: the client did not send its request in time: %w", frontdoor.ErrCallTimeout)

// maxInterim bounds the 1xx answers forwarded before a final one.
const maxInterim = 16

// maxResponseHead bounds a member's response head.
const maxResponseHead = 64 << 10

// badResponseError is a member's answer the lean path cannot read.
type badResponseError struct{ why string }

func (e *badResponseError) Error() string { return "malformed response from the replica: " + e.why }

// proxy serves the request whose head c.req holds (per-request binding):
// the lean counterpart of serveProxy, with the same picking, in-flight
// limits, retries of failed dials, timeouts, observations, counters,
// errors and access log line.
func (c *conn) proxy(snap *frontdoor.Snapshot) callResult {
	s := c.s
	h := &c.req
	b, _ := c.br.Peek(h.n)
	start := s.now()
	method := methodString(h.method.of(b))
	isHead := method == http.MethodHead
	hasBody := h.chunked || h.contentLength > 0

	e := &c.entry
	*e = Entry{}
	if s.acc != nil {
		*e = Entry{Start: start, Client: c.remote, Method: method, Target: intern(&c.lastTarget, h.target.of(b)), Proto: "HTTP/1.1"}
	}
	x := exchange{c: c, snap: snap, e: e, method: method, isHead: isHead, hasBody: hasBody}

	req := &c.pick
	*req = strategy.Request{}
	c.requestFacts(b, snap.Key, req)
	x.path = req.Path
	if c.looped(b) {
		return x.answer(frontdoor.ErrLoop)
	}
	// A group with affinity rules: the session table may pin the call.
	aff, hasAff := AffinityOf(snap)
	var dec frontdoor.AffinityDecision
	var areq *http.Request
	if hasAff {
		areq = c.affinityRequest(b, method)
		dec = aff.RouteHTTP(areq)
	}
	m, pinned, err := AcquireAffinity(snap, dec)
	if !pinned {
		m, err = s.acquire(snap, req, nil, c.waiting())
	}
	if err != nil {
		return x.answer(err)
	}
	if !leanMember(m) {
		m.Release()
		return callHandOver
	}
	x.take(m)
	defer x.release()

	to := frontdoor.TimeoutsOf(snap.Timeouts)
	c.deadline = time.Now().Add(to.Request)
	c.setWriteDeadline(c.deadline.Add(deadlineGrace))
	if hasBody {
		c.setReadDeadline(c.deadline, 0)
	}
	c.tried = c.tried[:0]

	var uc *memberConn
	var t0 time.Time
	for n := 1; ; {
		t0 = s.now()
		x.nothingRead = true
		err = nil
		addr := memberAddr(x.m)
		if uc = s.members.getIdle(addr); uc == nil {
			uc, err = c.dial(addr, to.Connect)
		}
		if err == nil {
			err = x.send(uc, b)
			if err != nil && x.hasBody && isSinkError(err) {
				// The member stopped taking the body: it may have answered
				// early (413, 401, a redirect) and closed. Relay that
				// answer, as net/http's Transport does, and end both
				// connections.
				if herr := x.readResponseHead(uc); herr == nil {
					x.early = true
					uc.noReuse = true
					err = nil
				}
			}
			if err == nil && !x.early {
				err = x.readResponseHead(uc)
			}
			if err == nil {
				break
			}
			_ = uc.nc.Close()
		}
		latency := s.now().Sub(t0)
		o := frontdoor.NotSent
		if uc != nil {
			o = x.outcome(err, uc)
		}
		d := frontdoor.Decide(frontdoor.Attempt{Outcome: o, N: n, Method: method, Retry: snap.Retry, Replayable: !x.headDone})
		if d.ReplicaFailed {
			x.observe(latency, true)
		}
		switch {
		case d.Again && d.SameReplica:
			continue
		case !d.Again:
			return x.fail(err, d, o)
		}
		// Another replica.
		failed := x.m
		c.tried = append(c.tried, failed)
		x.release()
		if pinned { // never elsewhere
			if o == frontdoor.NotSent {
				return x.answer(PinnedUnreachable(dec, err))
			}
			return x.answer(err)
		}
		next, perr := s.acquire(snap, req, c.tried, c.waiting())
		if perr != nil {
			if o == frontdoor.NotSent {
				return x.answer(frontdoor.Unreachable(perr, c.tried, err))
			}
			return x.answer(err)
		}
		x.take(next)
		if !leanMember(next) {
			x.release()
			return callHandOver
		}
		s.log.Debug("retrying call on another replica", "failed", failed.ID(), "replica", next.ID(), "outcome", o, "err", err)
		n++
	}

	// The member answered.
	res := &c.res
	latency := s.now().Sub(t0)
	if res.status == http.StatusSwitchingProtocols {
		_ = uc.nc.Close()
		o := frontdoor.BadResponse
		d := frontdoor.Decide(frontdoor.Attempt{Outcome: o, N: len(c.tried) + 1, Method: method, Retry: snap.Retry})
		if d.ReplicaFailed {
			x.observe(latency, true)
		}
		return x.fail(&badResponseError{why: "101 Switching Protocols to a request that asked for no upgrade"}, d, o)
	}
	d := frontdoor.Decide(frontdoor.Attempt{Outcome: frontdoor.Answered, N: len(c.tried) + 1, Method: method, Retry: snap.Retry, Failed: res.status >= 500})
	x.observe(latency, d.ReplicaFailed)
	x.m.Counters.Proxied.Add(1)
	if !x.headDone {
		_, _ = c.br.Discard(h.n)
		x.headDone = true
	}
	if res.eventStream {
		// An event stream lasts: only its headers are bounded.
		c.deadline = time.Time{}
		c.setWriteDeadline(time.Time{})
	}
	noBody := isHead || res.status < 200 || res.status == http.StatusNoContent || res.status == http.StatusNotModified
	toEOF := !noBody && !res.chunked && res.contentLength < 0
	// After an early answer the rest of the client's body is unread:
	// the connection cannot carry another request.
	closing := h.close || s.inShutdown.Load() || x.early
	ub, _ := uc.br.Peek(res.n)
	if hasAff {
		// Before the client sees the answer: once it holds a Location or
		// a cookie, the object's entry exists (in cluster mode, in etcd).
		aff.Answered(areq, dec, x.m.ID(), res.status, answerHeader(ub, res))
	}
	c.writeResponseHead(ub, noBody, closing)
	_, _ = uc.br.Discard(res.n)
	e.Status = res.status
	if s.acc != nil {
		e.Replica = x.m.ID()
	}

	src := source{br: uc.br, flush: c.bw, c: c, up: uc}
	var n int64
	switch {
	case noBody:
	case res.chunked:
		n, err = copyChunked(c.bw, &src, true, false)
	case toEOF:
		n, err = copyToEOF(c.bw, &src)
	default:
		n, err = copyLength(c.bw, &src, res.contentLength)
	}
	e.Bytes = n
	if err != nil {
		// Too late for an error answer: end both connections.
		_ = uc.nc.Close()
		if !isSinkError(err) && !errors.Is(err, errClientGone) {
			s.log.Warn("proxied call failed", "replica", x.m.ID(), "method", method, "path", req.Path, "err", err)
		}
		x.logLine()
		return callClose
	}
	if res.close || toEOF || uc.noReuse {
		_ = uc.nc.Close()
	} else {
		s.members.put(uc)
	}
	x.release()
	if err := c.bw.Flush(); err != nil {
		x.logLine()
		return callClose
	}
	x.logLine()
	if x.early {
		c.linger()
	}
	if closing {
		return callClose
	}
	return callNext
}

// lingerFor bounds how long a connection is drained after an early answer.
const lingerFor = 500 * time.Millisecond

// linger half-closes the client's connection after an early answer and
// reads what the client still sends, until it closes or lingerFor has
// passed: closing with the body unread would reset the connection, and a
// reset can discard the answer before the client reads it.
func (c *conn) linger() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerFor))
	_, _ = io.Copy(io.Discard, c.nc)
}

// exchange is the state of one lean call.
type exchange struct {
	c       *conn
	snap    *frontdoor.Snapshot
	m       *frontdoor.Member // counted in m's Live.Inflight while not nil
	e       *Entry
	method  string
	path    string
	isHead  bool
	hasBody bool
	// headDone: the request head is consumed from the client's buffer;
	// bodyDone: so is its body.
	headDone, bodyDone bool
	// early: the member answered before it took the whole body.
	early bool
	// nothingRead: the member's connection failed before any answer.
	nothingRead bool
	// hold is the call's hold on m's slot; answered: m's last answer
	// was not a failure.
	hold     frontdoor.Hold
	answered bool
}

// take makes m, which Acquire counted the call on, the exchange's member.
func (x *exchange) take(m *frontdoor.Member) {
	x.m, x.answered = m, false
	x.hold = m.Hold(x.c.pick.Cost, x.snap.MaxInflight)
}

func (x *exchange) release() {
	if x.m != nil {
		x.hold.End(x.answered)
		x.m, x.hold = nil, frontdoor.Hold{}
	}
}

func (x *exchange) observe(latency time.Duration, failed bool) {
	x.answered = !failed
	x.c.s.g.Observe(x.m, latency, failed)
	if x.snap.Observer != nil {
		x.snap.Observer.Observe(x.m.Replica, latency, failed)
	}
}

func (x *exchange) logLine() {
	if a := x.c.s.acc; a != nil {
		a.WriteEntry(x.e, x.c.s.now())
	}
}

// send writes the request to the member: head, then body.
func (x *exchange) send(uc *memberConn, b []byte) error {
	c := x.c
	h := &c.req
	// The read deadline wakes the wait for the answer to look at the
	// client now and then (waitUpstream); one still ahead is kept.
	now := time.Now()
	if uc.rdl.IsZero() || !uc.rdl.After(now) || (!c.deadline.IsZero() && uc.rdl.After(c.deadline)) {
		uc.rdl = c.checkDeadline(now)
		_ = uc.nc.SetReadDeadline(uc.rdl)
	}
	switch {
	case x.hasBody:
		uc.wdl = c.deadline
		_ = uc.nc.SetWriteDeadline(uc.wdl)
	case !uc.wdl.IsZero():
		// A head on an idle connection never waits to be written.
		uc.wdl = time.Time{}
		_ = uc.nc.SetWriteDeadline(uc.wdl)
	}
	uc.cw.n = 0
	c.writeUpstreamHead(uc.bw, b, x.m)
	if x.hasBody {
		_, _ = c.br.Discard(h.n)
		x.headDone = true
		src := source{br: c.br, flush: uc.bw}
		var err error
		if h.chunked {
			_, err = copyChunked(uc.bw, &src, false, true)
		} else {
			_, err = copyLength(uc.bw, &src, h.contentLength)
		}
		switch {
		case err == nil:
			x.bodyDone = true
		case isSinkError(err):
			return err
		case errors.Is(err, errBadChunked), errors.Is(err, errChunkLine):
			return &badBodyError{err}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return errClientTimeout
		default:
			return errClientGone
		}
	}
	if err := uc.bw.Flush(); err != nil {
		return &sinkError{err}
	}
	return nil
}

// badBodyError is a request body that breaks its framing.
type badBodyError struct{ err error }

func (e *badBodyError) Error() string { return e.err.Error() }
func (e *badBodyError) Unwrap() error { return e.err }

// readResponseHead reads the member's answer head into c.res, forwarding
// interim (1xx) answers to the client.
func (x *exchange) readResponseHead(uc *memberConn) error {
	c := x.c
	src := source{br: uc.br, flush: c.bw, c: c, up: uc}
	x.nothingRead = true
	for interim := 0; ; {
		n := uc.br.Buffered()
		b, _ := uc.br.Peek(n)
		if n > 0 {
			x.nothingRead = false
		}
		switch parseResponse(b, &c.res) {
		case malformed:
			return &badResponseError{why: c.res.why}
		case serveLean:
			st := c.res.status
			if st >= 200 || st == http.StatusSwitchingProtocols {
				return nil
			}
			if interim++; interim > maxInterim {
				return &badResponseError{why: "too many 1xx answers"}
			}
			c.writeResponseHead(b, true, false)
			_, _ = uc.br.Discard(c.res.n)
			continue
		}
		if n >= uc.br.Size() {
			if n >= maxResponseHead {
				return &badResponseError{why: "header fields too large"}
			}
			uc.grow(maxResponseHead)
			continue
		}
		if _, err := src.fill(n + 1); err != nil {
			if isSinkError(err) {
				return errClientGone
			}
			return err
		}
	}
}

// outcome classifies the failed attempt err on uc for the attempt
// policy.
func (x *exchange) outcome(err error, uc *memberConn) frontdoor.Outcome {
	var bad *badBodyError
	switch {
	case errors.Is(err, errClientGone), errors.As(err, &bad):
		return frontdoor.ClientGone
	case errors.Is(err, errClientTimeout):
		return frontdoor.ClientTimeout
	case errors.Is(err, frontdoor.ErrCallTimeout):
		return frontdoor.ReplicaTimeout
	case !x.nothingRead:
		return frontdoor.BadResponse
	case uc.cw.n == 0 && uc.reused:
		return frontdoor.Stale
	case uc.cw.n == 0 && !isSinkError(err):
		return frontdoor.NotSent
	}
	return frontdoor.NoResponse
}

// fail ends a call that got no answer from its member, as the attempt
// policy decided (d, after an attempt that ended with o, failing with
// err); the member was observed already.
func (x *exchange) fail(err error, d frontdoor.Decision, o frontdoor.Outcome) callResult {
	c := x.c
	var bad *badBodyError
	if errors.As(err, &bad) {
		// Not the member's failure: the client's body broke its framing.
		x.m.Counters.Proxied.Add(1)
		if c.s.acc != nil {
			x.e.Replica = x.m.ID()
		}
		return x.write(c.s.answer(x.snap, &BadRequestError{Message: "malformed request body: " + bad.Error()}))
	}
	if o == frontdoor.NotSent {
		// Connecting failed: the call never reached the member.
		c.tried = append(c.tried, x.m)
		x.release()
	} else {
		x.m.Counters.Proxied.Add(1)
		if c.s.acc != nil {
			x.e.Replica = x.m.ID()
		}
	}
	switch d.Answer {
	case frontdoor.AnswerNothing:
		x.e.Status = StatusClientClosed
		x.logLine()
		return callClose
	case frontdoor.AnswerUnreachable:
		err = frontdoor.Unreachable(frontdoor.ErrNoReplica, c.tried, err)
	case frontdoor.AnswerTimeout:
		if !errors.Is(err, frontdoor.ErrCallTimeout) {
			err = fmt.Errorf("%w: %w", frontdoor.ErrCallTimeout, err)
		}
	}
	return x.answer(err)
}

// answer answers err (logged as a failed call when a member was chosen).
func (x *exchange) answer(err error) callResult {
	c := x.c
	if x.m != nil || len(c.tried) > 0 {
		replica := ""
		if x.m != nil {
			replica = x.m.ID()
		}
		c.s.log.Warn("proxied call failed", "replica", replica, "method", x.method, "path", x.path, "err", err)
	}
	return x.write(c.s.answer(x.snap, err))
}

// write sends the front door's own answer a; the connection stays open
// only when the request was read whole.
func (x *exchange) write(a Answer) callResult {
	c := x.c
	if !x.headDone {
		_, _ = c.br.Discard(c.req.n)
		x.headDone = true
	}
	closing := c.req.close || c.s.inShutdown.Load() || (x.hasBody && !x.bodyDone)
	c.writeAnswer(a, closing, x.isHead)
	x.e.Status = a.Status
	x.e.Bytes = int64(len(a.Body))
	if x.isHead {
		x.e.Bytes = 0
	}
	x.release()
	err := c.bw.Flush()
	x.logLine()
	if err != nil || closing {
		return callClose
	}
	return callNext
}

// waitUpstream decides, after reading a member's connection failed with
// err, whether to read again: the read timed out at a check of the client
// (still there, the call's deadline not passed). It returns nil to read
// again, frontdoor.ErrCallTimeout, errClientGone or err.
func (c *conn) waitUpstream(uc *memberConn, err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	now := time.Now()
	if !c.deadline.IsZero() && !now.Before(c.deadline) {
		return frontdoor.ErrCallTimeout
	}
	if c.clientGone() {
		return errClientGone
	}
	uc.rdl = c.checkDeadline(now)
	_ = uc.nc.SetReadDeadline(uc.rdl)
	return nil
}

// waiting is how a call of c waiting in the group's queue learns that its
// client went away: the lean path has no reader goroutine, so the wait
// peeks at the connection, as a wait for the member's answer does.
func (c *conn) waiting() frontdoor.Client {
	return frontdoor.Client{Gone: c.clientGone}
}

// clientGone reports whether the client closed its connection (or the
// server is closing it).
func (c *conn) clientGone() bool {
	return c.state.Load() == connClosed || c.s.closed.Load() || c.raw.peek() == peekClosed
}

// checkDeadline is when a wait for the member that starts at now next
// looks at the client: peerCheckInterval later, or at the call's deadline.
func (c *conn) checkDeadline(now time.Time) time.Time {
	d := now.Add(peerCheckInterval)
	if !c.deadline.IsZero() && c.deadline.Before(d) {
		d = c.deadline
	}
	return d
}

// setWriteDeadline bounds the writes to the client; it touches the
// connection only when the deadline moves by more than a second (zero:
// none).
func (c *conn) setWriteDeadline(d time.Time) {
	if d.IsZero() {
		if !c.wdl.IsZero() {
			_ = c.nc.SetWriteDeadline(d)
			c.wdl = d
		}
		return
	}
	if c.wdl.IsZero() || c.wdl.Before(d) || c.wdl.After(d.Add(time.Second)) {
		d = d.Add(time.Second)
		_ = c.nc.SetWriteDeadline(d)
		c.wdl = d
	}
}

// dial connects to a member within the connect timeout.
func (c *conn) dial(addr string, timeout time.Duration) (*memberConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.s.members.dialConn(ctx, addr)
}

// memberAddr is the host:port of an http:// member.
func memberAddr(m *frontdoor.Member) string {
	if m.URL.Port() != "" {
		return m.URL.Host
	}
	return net.JoinHostPort(m.URL.Hostname(), "80")
}

// writeUpstreamHead writes the head of the request sent to m: the path
// under m's base path, Host m's, the client's fields but the hop-by-hop
// ones, X-Forwarded-For/-Host/-Proto as ReverseProxy.SetXForwarded sets
// them, and the body's framing. b is the client's head.
func (c *conn) writeUpstreamHead(w *bufio.Writer, b []byte, m *frontdoor.Member) {
	h := &c.req
	_, _ = w.Write(h.method.of(b))
	_ = w.WriteByte(' ')
	base := m.URL.EscapedPath()
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	_, _ = w.WriteString(base)
	_, _ = w.Write(h.path.of(b))
	if !h.query.empty() {
		_ = w.WriteByte('?')
		_, _ = w.Write(h.query.of(b))
	}
	_, _ = w.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = w.WriteString(m.URL.Host)
	_, _ = w.WriteString("\r\n")
	xff := false
	for i := range h.fields {
		f := &h.fields[i]
		switch f.kind {
		case fHost, fContentLength, fForwarded, fXForwardedHost, fXForwardedProto, fTrailer:
			continue
		case fXForwardedFor:
			xff = true
			continue
		}
		if h.hopByHop(b, f) {
			continue
		}
		writeField(w, f.name.of(b), f.value.of(b))
	}
	if h.teTrailers {
		_, _ = w.WriteString("Te: trailers\r\n")
	}
	if c.ip != "" {
		_, _ = w.WriteString("X-Forwarded-For: ")
		if xff {
			for i := range h.fields {
				if f := &h.fields[i]; f.kind == fXForwardedFor {
					_, _ = w.Write(f.value.of(b))
					_, _ = w.WriteString(", ")
				}
			}
		}
		_, _ = w.WriteString(c.ip)
		_, _ = w.WriteString("\r\n")
	}
	_, _ = w.WriteString("X-Forwarded-Host: ")
	_, _ = w.Write(h.host.of(b))
	_, _ = w.WriteString("\r\n")
	if c.tls {
		_, _ = w.WriteString("X-Forwarded-Proto: https\r\n")
	} else {
		_, _ = w.WriteString("X-Forwarded-Proto: http\r\n")
	}
	if c.s.via != "" {
		_, _ = w.WriteString("Via: 1.1 ")
		_, _ = w.WriteString(c.s.via)
		_, _ = w.WriteString("\r\n")
	}
	switch {
	case h.chunked:
		_, _ = w.WriteString("Transfer-Encoding: chunked\r\n")
	case h.contentLength >= 0:
		_, _ = w.WriteString("Content-Length: ")
		writeInt(w, h.contentLength)
		_, _ = w.WriteString("\r\n")
	}
	_, _ = w.WriteString("\r\n")
}

// writeResponseHead writes the head of the member's answer (b holds it,
// parsed in c.res) to the client: the member's fields but the hop-by-hop
// ones, and the framing of what the client gets — its length, or chunked
// when the member's answer is chunked or ends with the connection.
func (c *conn) writeResponseHead(b []byte, noBody, closing bool) {
	r := &c.res
	w := c.bw
	writeStatusLine(w, r.status, r.reason.of(b))
	for i := range r.fields {
		f := &r.fields[i]
		if f.kind == fContentLength || r.hopByHop(b, f) {
			continue
		}
		writeField(w, f.name.of(b), f.value.of(b))
	}
	if r.status >= 200 {
		switch {
		case r.contentLength >= 0:
			_, _ = w.WriteString("Content-Length: ")
			writeInt(w, r.contentLength)
			_, _ = w.WriteString("\r\n")
		case !noBody:
			_, _ = w.WriteString("Transfer-Encoding: chunked\r\n")
		}
		if closing {
			_, _ = w.WriteString("Connection: close\r\n")
		}
	}
	_, _ = w.WriteString("\r\n")
}

func writeField(w *bufio.Writer, name, value []byte) {
	_, _ = w.Write(name)
	_, _ = w.WriteString(": ")
	_, _ = w.Write(value)
	_, _ = w.WriteString("\r\n")
}

// requestFacts fills what the picker reads of the request whose head b
// holds: Fulcrum-Client, the path, Fulcrum-Cost and the key k asks for.
func (c *conn) requestFacts(b []byte, k strategy.KeySpec, req *strategy.Request) {
	h := &c.req
	p := h.path.of(b)
	if h.escaped {
		req.Path, _ = url.PathUnescape(string(p))
	} else {
		req.Path = intern(&c.lastPath, p)
	}
	client, cost := false, false
	for i := range h.fields {
		f := &h.fields[i]
		switch {
		case f.kind == fFulcrumClient && !client:
			client = true
			req.Client = intern(&c.lastClient, f.value.of(b))
		case f.kind == fFulcrumCost && !cost:
			cost = true
			ParseCost(string(f.value.of(b)), req)
		}
	}
	switch k.Source {
	case strategy.KeyHeader:
		name := []byte(k.Name)
		for i := range h.fields {
			if f := &h.fields[i]; asciiEqualFold(f.name.of(b), name) {
				req.Key = string(f.value.of(b))
				break
			}
		}
	case strategy.KeyCookie:
		r := http.Request{Header: http.Header{}}
		for i := range h.fields {
			if f := &h.fields[i]; asciiEqualFold(f.name.of(b), []byte("Cookie")) {
				r.Header.Add("Cookie", string(f.value.of(b)))
			}
		}
		if ck, err := r.Cookie(k.Name); err == nil {
			req.Key = ck.Value
		}
	case strategy.KeyClientAddress:
		req.Key = c.ip
		if req.Key == "" {
			req.Key = c.remote
		}
	}
}

// looped reports whether the request whose head b holds already passed
// through this balancer: a Via field names it.
func (c *conn) looped(b []byte) bool {
	if c.s.via == "" {
		return false
	}
	h := &c.req
	for i := range h.fields {
		if f := &h.fields[i]; asciiEqualFold(f.name.of(b), []byte("Via")) && ViaHas(string(f.value.of(b)), c.s.via) {
			return true
		}
	}
	return false
}

// intern returns b as a string, reusing *last when equal.
func intern(last *string, b []byte) string {
	if *last != string(b) {
		*last = string(b)
	}
	return *last
}

// methodString returns the method without allocating for the usual ones.
func methodString(b []byte) string {
	switch string(b) {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodOptions:
		return http.MethodOptions
	}
	return string(b)
}
