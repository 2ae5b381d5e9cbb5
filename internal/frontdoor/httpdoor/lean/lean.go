package lean

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The engine serves the front door's common case — plain HTTP/1.1
// requests of a per-request group, proxied to http:// members — on one
// goroutine per connection that reads requests, sends them to the member
// and copies the answers back, with no goroutine or allocation per call.
// net/http's server spends more than half its time per call on what the
// engine does not do: waking its background reader and the handler's
// goroutines, building http.Request, header maps and contexts
// (docs/bench.md). Whatever the engine does not handle — HTTP/2,
// upgrades, Expect, HTTP/1.0, other binding modes — Serve gives back, with
// the bytes already read, at the start of a request, for net/http to serve
// the rest of the connection.

// Sizes of a connection's buffers. A request head larger than ReadBuffer
// goes to net/http, once read whole (431 beyond MaxHeaderBytes).
const (
	ReadBuffer      = 8 << 10
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
	leanReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, ReadBuffer) }}
	leanWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, leanWriteBuffer) }}
)

// conn is one client connection served by the engine. All but state
// belong to the connection's goroutine.
type conn struct {
	s      *Engine
	nc     net.Conn
	raw    *rawIO // nc's reads and writes
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string // nc's remote address
	ip     string // its host, for X-Forwarded-For; "" when it has none
	tls    bool   // nc is a *tls.Conn: X-Forwarded-Proto is https
	state  atomic.Int32

	req reqHead
	res resHead
	// pick and entry are the call's picker request and access log line
	// (here, not on the call's stack, which they would escape).
	pick  strategy.Request
	entry Entry
	// deadline ends the call in progress (zero: not bounded).
	deadline time.Time
	// rdl and wdl are the read and write deadlines set on nc.
	rdl, wdl time.Time
	// tried are the members whose dial failed, for the call in progress.
	tried []*frontdoor.Member
	// Strings kept from the previous request, reused when equal.
	lastPath, lastClient, lastTarget string
}

// Serve serves the client connection nc on the calling goroutine until it
// closes, or until a request comes that the engine does not serve. It
// returns nil when the connection was served to its end (and is closed),
// or the connection to hand over to net/http: its reads first return the
// bytes the engine already read, and it has no deadlines set. Serve
// closes nc at once when the engine is shutting down.
func (s *Engine) Serve(nc net.Conn) (rest net.Conn) {
	c := s.newConn(nc)
	if c == nil {
		_ = nc.Close()
		return nil
	}
	return c.serve()
}

// newConn starts tracking nc; nil once shutting down.
func (s *Engine) newConn(nc net.Conn) *conn {
	c := &conn{s: s, nc: nc}
	_, c.tls = nc.(*tls.Conn)
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
	return c
}

func (s *Engine) forgetConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	s.drainedLocked()
}

// drainedLocked signals Shutdown once no connection is left. Caller must
// hold s.mu.
func (s *Engine) drainedLocked() {
	if s.inShutdown.Load() && len(s.conns) == 0 {
		s.drainOnce.Do(func() { close(s.drained) })
	}
}

// Shutdown stops serving new connections, closes those waiting for a
// request (and each one as soon as it is), and waits for the others to
// finish their calls. When ctx ends first it returns ctx's error; Close
// then ends the rest.
func (s *Engine) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.inShutdown.Store(true)
	s.closeConnsLocked(false)
	s.drainedLocked()
	s.mu.Unlock()
	select {
	case <-s.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes every connection at once, aborting calls in flight.
func (s *Engine) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inShutdown.Store(true)
	s.closed.Store(true)
	s.closeConnsLocked(true)
	s.drainedLocked()
}

// closeConnsLocked closes the connections that wait for a request (or,
// with all, every one). Caller must hold s.mu.
func (s *Engine) closeConnsLocked(all bool) {
	for c := range s.conns {
		if c.state.CompareAndSwap(connIdle, connClosed) || all {
			c.state.Store(connClosed)
			_ = c.nc.Close()
		}
	}
}

// serve runs the connection until it closes or goes to net/http (the
// connection to hand over, or nil).
func (c *conn) serve() (rest net.Conn) {
	s := c.s
	c.raw = newRawIO(c.nc)
	c.br = leanReaders.Get().(*bufio.Reader)
	c.br.Reset(c.raw)
	c.bw = leanWriters.Get().(*bufio.Writer)
	c.bw.Reset(c.raw)
	defer func() {
		if rest == nil {
			_ = c.nc.Close()
			if c.br.Size() == ReadBuffer {
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
			return nil
		}
		v, err := c.readRequestHead()
		switch {
		case err != nil:
			// Closed, reset, or too slow (the request timeout bounds a
			// head): no answer, as net/http.
			return nil
		case v == handOver:
			return c.handOver()
		case v == malformed:
			c.answerBad(http.StatusBadRequest, "malformed request: "+c.req.why)
			return nil
		case v == tooLarge:
			c.answerBad(http.StatusRequestHeaderFieldsTooLarge,
				"request head larger than "+strconv.Itoa(MaxHeaderBytes)+" bytes")
			return nil
		}
		snap := s.g.Snapshot()
		if !leanSnapshot(snap) {
			return c.handOver()
		}
		switch c.proxy(snap) {
		case callHandOver:
			return c.handOver()
		case callClose:
			return nil
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
// net/http does not count all that the engine read before it).
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

// handOver returns the connection, with what was read of it, for
// net/http: guarded, so that every request net/http reads of it is judged
// by RFC 9112's framing rules too (guard.go).
func (c *conn) handOver() net.Conn {
	_ = c.nc.SetDeadline(time.Time{})
	c.rdl, c.wdl = time.Time{}, time.Time{}
	return newGuard(c.nc, c.br)
}

// leanSnapshot reports whether the lean path serves requests under snap:
// per-request binding, every eligible member an http:// URL.
func leanSnapshot(snap *frontdoor.Snapshot) bool {
	if snap == nil || snap.Binding != protocol.PerRequest {
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
	e := c.s.answer(snap, &BadRequestError{Status: status, Message: msg})
	c.writeAnswer(e, true, false)
	_ = c.bw.Flush()
	if c.s.acc != nil {
		now := c.s.now()
		c.s.acc.WriteEntry(&Entry{Start: now, Client: c.remote, Method: "-", Target: "-", Proto: "HTTP/1.1",
			Status: status}, now)
	}
}

// writeAnswer writes an answer of the front door to the client.
func (c *conn) writeAnswer(e Answer, closing, head bool) {
	w := c.bw
	writeStatusLine(w, e.Status, nil)
	_, _ = w.WriteString("Content-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: ")
	writeInt(w, int64(len(e.Body)))
	_, _ = w.WriteString("\r\n")
	if e.Group != "" {
		_, _ = w.WriteString("Fulcrum-Group: ")
		_, _ = w.WriteString(e.Group)
		_, _ = w.WriteString("\r\n")
	}
	if e.Status == http.StatusServiceUnavailable {
		_, _ = w.WriteString("Retry-After: 1\r\n")
	}
	if closing {
		_, _ = w.WriteString("Connection: close\r\n")
	}
	_, _ = w.WriteString("\r\n")
	if !head {
		_, _ = w.Write(e.Body)
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
