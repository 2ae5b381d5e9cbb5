package httpdoor

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// The lean path serves the front door's common case — plain HTTP/1.1
// requests of a per-request group, proxied to http:// members — on one
// goroutine per connection that reads requests, sends them to the member
// and copies the answers back, with no goroutine or allocation per call.
// net/http's server spends more than half its time per call on what the
// lean path does not do: waking its background reader and the handler's
// goroutines, building http.Request, header maps and contexts
// (docs/bench.md). Whatever the lean path does not handle — HTTP/2,
// upgrades, Expect, HTTP/1.0, other binding modes — goes, with the bytes
// already read, to the net/http server (ServeHTTP) through the handoff
// listener, at the start of a request, for the rest of the connection.

// Sizes of a lean connection's buffers. A request head larger than the
// read buffer goes to net/http, once read whole (431 beyond
// MaxHeaderBytes).
const (
	leanReadBuffer  = 8 << 10
	leanWriteBuffer = 4 << 10
)

// peerCheckInterval is how often a call waiting for its member looks
// whether its client is still there (net/http's background read, without
// a goroutine). The member connection's read deadline that wakes the wait
// is moved about this often, not at every call.
const peerCheckInterval = 100 * time.Millisecond

// States of a lean connection, for Shutdown.
const (
	connIdle   int32 = iota // waiting for a request: Shutdown may close it
	connActive              // serving a request
	connClosed              // closed by Shutdown or Close
)

var (
	leanReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, leanReadBuffer) }}
	leanWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, leanWriteBuffer) }}
)

// conn is one client connection served by the lean path. All but state
// belong to the connection's goroutine.
type conn struct {
	s      *Server
	nc     net.Conn
	raw    *rawIO // nc's reads and writes
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string // nc's remote address
	ip     string // its host, for X-Forwarded-For; "" when it has none
	state  atomic.Int32

	req reqHead
	res resHead
	// pick and entry are the call's picker request and access log line
	// (here, not on the call's stack, which they would escape).
	pick  strategy.Request
	entry logEntry
	// deadline ends the call in progress (zero: not bounded).
	deadline time.Time
	// rdl and wdl are the read and write deadlines set on nc.
	rdl, wdl time.Time
	// tried are the members whose dial failed, for the call in progress.
	tried []*frontdoor.Member
	// Strings kept from the previous request, reused when equal.
	lastPath, lastClient, lastTarget string
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
		c := s.newConn(nc)
		if c == nil {
			_ = nc.Close()
			return nil
		}
		go c.serve()
		return nil
	}, acceptloop.Options{Logger: s.log, Name: "http front door"})
	if s.inShutdown.Load() {
		return http.ErrServerClosed
	}
	return err
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

// newConn starts tracking nc; nil once shutting down.
func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{s: s, nc: nc}
	if a := nc.RemoteAddr(); a != nil {
		c.remote = a.String()
		if host, _, err := net.SplitHostPort(c.remote); err == nil {
			c.ip = host
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inShutdown.Load() {
		return nil
	}
	s.conns[c] = struct{}{}
	s.leanConns.enter()
	return c
}

func (s *Server) forgetConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.leanConns.leave()
}

// closeListenersLocked closes the listeners. Caller must hold s.mu.
func (s *Server) closeListenersLocked() {
	for ln := range s.listeners {
		_ = (*ln).Close()
	}
}

// closeLeanConns closes the lean connections that wait for a request (or,
// with all, every one).
func (s *Server) closeLeanConns(all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(connIdle, connClosed) || all {
			c.state.Store(connClosed)
			_ = c.nc.Close()
		}
	}
}

// serve runs the connection until it closes or goes to net/http.
func (c *conn) serve() {
	s := c.s
	c.raw = newRawIO(c.nc)
	c.br = leanReaders.Get().(*bufio.Reader)
	c.br.Reset(c.raw)
	c.bw = leanWriters.Get().(*bufio.Writer)
	c.bw.Reset(c.raw)
	handed := false
	defer func() {
		if !handed {
			_ = c.nc.Close()
			if c.br.Size() == leanReadBuffer {
				c.br.Reset(nil)
				leanReaders.Put(c.br)
			}
		}
		c.bw.Reset(nil)
		leanWriters.Put(c.bw)
		s.forgetConn(c)
	}()
	for {
		if !c.awaitRequest() {
			return
		}
		v, err := c.readRequestHead()
		switch {
		case err != nil:
			// Closed, reset, or too slow (the request timeout bounds a
			// head): no answer, as net/http.
			return
		case v == handOver:
			handed = c.handOver()
			return
		case v == malformed:
			c.answerBad(http.StatusBadRequest, "malformed request: "+c.req.why)
			return
		case v == tooLarge:
			c.answerBad(http.StatusRequestHeaderFieldsTooLarge,
				"request head larger than "+strconv.Itoa(MaxHeaderBytes)+" bytes")
			return
		}
		snap := s.g.Snapshot()
		if !leanSnapshot(snap) {
			handed = c.handOver()
			return
		}
		switch c.proxy(snap) {
		case callHandOver:
			handed = c.handOver()
			return
		case callClose:
			return
		}
	}
}

// awaitRequest waits, under the idle timeout, for the first byte of the
// next request unless one is buffered. It reports false when the
// connection is to close.
func (c *conn) awaitRequest() bool {
	s := c.s
	if c.br.Buffered() == 0 {
		c.state.Store(connIdle)
		if s.inShutdown.Load() {
			return false
		}
		// Within a second (or an eighth) of the idle timeout, so that the
		// timer moves about once a second, not once a request.
		c.setReadDeadline(time.Now().Add(s.to.Idle), min(time.Second, s.to.Idle/8))
		if _, err := c.br.Peek(1); err != nil {
			return false
		}
		if !c.state.CompareAndSwap(connIdle, connActive) {
			return false
		}
	} else {
		if s.inShutdown.Load() {
			return false
		}
		c.state.Store(connActive)
	}
	return true
}

// setReadDeadline sets nc's read deadline to d unless the one set is in
// [d-slack, d].
func (c *conn) setReadDeadline(d time.Time, slack time.Duration) {
	if c.rdl.IsZero() || c.rdl.After(d) || c.rdl.Before(d.Add(-slack)) {
		_ = c.nc.SetReadDeadline(d)
		c.rdl = d
	}
}

// readRequestHead reads until the buffer holds a whole head, or enough of
// one for a verdict; a head that did not come whole with its first bytes
// must come within the request timeout. A head larger than the buffer is
// handed over, once read whole within MaxHeaderBytes (tooLarge beyond:
// net/http does not count all that the lean path read before it).
func (c *conn) readRequestHead() (verdict, error) {
	for bounded, big := false, false; ; {
		n := c.br.Buffered()
		b, _ := c.br.Peek(n)
		if k := emptyLines(b); k > 0 {
			// Empty lines before a request are ignored (RFC 9112 §2.2),
			// such as a CRLF a client sent after a body.
			_, _ = c.br.Discard(k)
			n -= k
			b = b[k:]
		}
		v := parseRequest(b, &c.req)
		switch {
		case v != needMore && big && v != malformed:
			if k := headLength(b); k == 0 || k > MaxHeaderBytes {
				return tooLarge, nil
			}
			return handOver, nil
		case v != needMore:
			return v, nil
		case n >= MaxHeaderBytes:
			return tooLarge, nil
		case n >= c.br.Size():
			big = true
			c.growReader()
			continue
		}
		if !bounded {
			bounded = true
			c.setReadDeadline(time.Now().Add(c.s.to.Request), 0)
		}
		if _, err := c.br.Peek(n + 1); err != nil {
			return needMore, err
		}
	}
}

// growReader moves what c's reader holds to one that can hold a head of
// MaxHeaderBytes, for the rest of the connection.
func (c *conn) growReader() {
	b, _ := c.br.Peek(c.br.Buffered())
	nb := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(b)), c.raw), MaxHeaderBytes+1)
	c.br.Reset(nil)
	leanReaders.Put(c.br)
	c.br = nb
}

// handOver gives the connection, with what was read of it, to net/http.
func (c *conn) handOver() bool {
	c.s.handedOver.Add(1)
	_ = c.nc.SetDeadline(time.Time{})
	c.rdl, c.wdl = time.Time{}, time.Time{}
	b, _ := c.br.Peek(c.br.Buffered())
	rc := &replayConn{Conn: c.nc, br: c.br}
	rc.closeAfterFirst.Store(framingConflict(b))
	return c.s.handoff.give(rc)
}

// leanSnapshot reports whether the lean path serves requests under snap:
// per-request binding, every eligible member an http:// URL.
func leanSnapshot(snap *frontdoor.Snapshot) bool {
	if snap == nil || snap.Binding != registry.PerRequest {
		return false
	}
	for _, m := range snap.Eligible {
		if !leanMember(m) {
			return false
		}
	}
	return true
}

// leanMember reports whether the lean path can call m: plain HTTP.
func leanMember(m *frontdoor.Member) bool {
	return m.URL != nil && m.URL.Scheme == "http" && m.URL.Host != "" && m.URL.User == nil
}

// answerBad answers a request the front door cannot read (status 400 or
// 431) and closes the connection.
func (c *conn) answerBad(status int, msg string) {
	snap := c.s.g.Snapshot()
	e := detailAnswer(snap, status, errorDetail{Code: CodeBadRequest, Message: msg})
	c.writeAnswer(e, true, false)
	_ = c.bw.Flush()
	if c.s.acc != nil {
		now := c.s.now()
		c.s.acc.writeEntry(&logEntry{start: now, client: c.remote, method: "-", target: "-", proto: "HTTP/1.1",
			status: status}, now)
	}
}

// writeAnswer writes an error answer of the front door to the client.
func (c *conn) writeAnswer(e answer, closing, head bool) {
	w := c.bw
	writeStatusLine(w, e.status, nil)
	_, _ = w.WriteString("Content-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: ")
	writeInt(w, int64(len(e.body)))
	_, _ = w.WriteString("\r\n")
	if e.group != "" {
		_, _ = w.WriteString("Fulcrum-Group: ")
		_, _ = w.WriteString(e.group)
		_, _ = w.WriteString("\r\n")
	}
	if e.status == http.StatusServiceUnavailable {
		_, _ = w.WriteString("Retry-After: 1\r\n")
	}
	if closing {
		_, _ = w.WriteString("Connection: close\r\n")
	}
	_, _ = w.WriteString("\r\n")
	if !head {
		_, _ = w.Write(e.body)
	}
}

// writeStatusLine writes "HTTP/1.1 <status> <reason>"; the status's usual
// text when reason is empty.
func writeStatusLine(w *bufio.Writer, status int, reason []byte) {
	_, _ = w.WriteString("HTTP/1.1 ")
	writeInt(w, int64(status))
	_ = w.WriteByte(' ')
	if len(reason) > 0 {
		_, _ = w.Write(reason)
	} else {
		_, _ = w.WriteString(http.StatusText(status))
	}
	_, _ = w.WriteString("\r\n")
}

func writeInt(w *bufio.Writer, n int64) {
	_, _ = w.Write(strconv.AppendInt(w.AvailableBuffer(), n, 10))
}
