package lean

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
)

// MemberClient sends plain HTTP/1.1 calls to http:// members on kept-alive
// connections, writing the request and reading the answer on the calling
// goroutine. http.Transport hands every call to a write loop and a read
// loop goroutine of the connection, and on a lightly loaded machine each
// hand-off wakes a sleeping thread: that cost the front door more CPU than
// the proxying itself (docs/bench.md). Calls it does not take (TLS,
// upgrades, Expect: 100-continue, HTTP/2) go through http.Transport.
//
// Its failures match http.Transport's where upstream relies on them: a
// failure to connect is a *dialError (nothing was sent); a kept-alive
// connection found dead before anything was written is replaced by a fresh
// one when the body can be sent again. Safe for concurrent use.
type MemberClient struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle     int           // idle connections kept per member
	idleTimeout time.Duration // an idle connection older than this is closed

	mu        sync.Mutex
	idle      map[string][]*memberConn // by host:port, most recently used last
	lastSweep time.Time
}

// memberConn is one connection to a member.
type memberConn struct {
	nc     net.Conn
	raw    *rawIO // nc's reads and writes
	br     *bufio.Reader
	bw     *bufio.Writer // writes through cw
	cw     *countingWriter
	addr   string
	idleAt time.Time
	reused bool
	// rdl and wdl are the read and write deadlines the lean path set on
	// nc (zero: none); they stay when the connection is idle.
	rdl, wdl time.Time
	// noReuse: br was replaced by a larger reader (grow); the connection
	// is closed after the call.
	noReuse bool
}

// grow replaces c's reader by one of size bytes that first returns what
// c's reader holds, for a response head larger than c's reader. The
// connection is not reused.
func (c *memberConn) grow(size int) {
	held, _ := c.br.Peek(c.br.Buffered())
	rest := append([]byte(nil), held...)
	c.br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(rest), c.raw), size)
	c.noReuse = true
}

func NewMemberClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *MemberClient {
	return &MemberClient{dial: dial, maxIdle: 256, idleTimeout: registry.DefaultIdleTimeout, idle: map[string][]*memberConn{}}
}

// Takes reports whether the client handles out; other calls go to
// http.Transport.
func (h *MemberClient) Takes(out *http.Request) bool {
	return out.URL.Scheme == "http" && out.Header.Get("Upgrade") == "" && out.Header.Get("Expect") == ""
}

// CloseIdle closes the idle connections.
func (h *MemberClient) CloseIdle() {
	h.mu.Lock()
	idle := h.idle
	h.idle = map[string][]*memberConn{}
	h.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.nc.Close()
		}
	}
}

// get returns an idle connection to addr, or dials one.
func (h *MemberClient) get(ctx context.Context, addr string) (*memberConn, error) {
	if c := h.getIdle(addr); c != nil {
		return c, nil
	}
	return h.dialConn(ctx, addr)
}

// getIdle returns an idle connection to addr that is still open, or nil.
func (h *MemberClient) getIdle(addr string) *memberConn {
	now := time.Now()
	h.mu.Lock()
	for cs := h.idle[addr]; len(cs) > 0; cs = h.idle[addr] {
		c := cs[len(cs)-1]
		h.idle[addr] = cs[:len(cs)-1]
		if now.Sub(c.idleAt) >= h.idleTimeout {
			c.nc.Close()
			continue
		}
		h.mu.Unlock()
		if c.raw.peek() == peekEmpty {
			c.reused = true
			return c
		}
		c.nc.Close() // the member closed it while idle
		h.mu.Lock()
	}
	h.mu.Unlock()
	return nil
}

// dialConn dials a new connection to addr.
func (h *MemberClient) dialConn(ctx context.Context, addr string) (*memberConn, error) {
	nc, err := h.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	raw := newRawIO(nc)
	cw := &countingWriter{w: raw}
	return &memberConn{nc: nc, raw: raw, br: bufio.NewReaderSize(raw, memberReadBuffer), bw: bufio.NewWriterSize(cw, memberWriteBuffer), cw: cw, addr: addr}, nil
}

// A member connection's buffers. Larger than a client connection's (8 and
// 4 KiB, held by every idle client): member connections are few (pooled,
// bounded by the calls in flight), and a large answer or body then takes
// a quarter of the read and write system calls. On a 240 KB echo (bench
// scalability --sizes 240000) 4 KiB buffers made per-request 1.27 × HAProxy's
// mean response time; these, 1.08 ×.
const (
	memberReadBuffer  = 32 << 10
	memberWriteBuffer = 16 << 10
)

// put keeps c for the next call, or closes it when the pool is full.
// Now and then it also closes the connections idle for too long, those of
// members no longer called included.
func (h *MemberClient) put(c *memberConn) {
	now := time.Now()
	c.idleAt = now
	var stale []*memberConn
	h.mu.Lock()
	if now.Sub(h.lastSweep) >= h.idleTimeout/2 {
		h.lastSweep = now
		stale = h.sweepLocked(now)
	}
	keep := len(h.idle[c.addr]) < h.maxIdle
	if keep {
		h.idle[c.addr] = append(h.idle[c.addr], c)
	}
	h.mu.Unlock()
	if !keep {
		c.nc.Close()
	}
	for _, s := range stale {
		s.nc.Close()
	}
}

// sweepLocked takes the connections idle for idleTimeout or more out of
// the pool and returns them. Caller must hold h.mu.
func (h *MemberClient) sweepLocked(now time.Time) []*memberConn {
	var stale []*memberConn
	for addr, cs := range h.idle {
		kept := cs[:0]
		for _, c := range cs {
			if now.Sub(c.idleAt) >= h.idleTimeout {
				stale = append(stale, c)
			} else {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			delete(h.idle, addr)
		} else {
			h.idle[addr] = kept
		}
	}
	return stale
}

// RoundTrip sends out and returns the member's answer, whose body reads
// from the connection; the connection is kept for another call once the
// body has been read to its end.
func (h *MemberClient) RoundTrip(out *http.Request) (*http.Response, error) {
	ctx := out.Context()
	addr := out.URL.Host
	if out.URL.Port() == "" {
		addr = net.JoinHostPort(out.URL.Hostname(), "80")
	}
	for {
		c, err := h.get(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, o, err := h.exchange(ctx, c, out)
		if err == nil {
			return resp, nil
		}
		c.nc.Close()
		// A kept-alive connection the member had closed before anything
		// was written: the call goes again on a fresh one (the attempt
		// policy's Stale). Anything else goes back to the caller.
		replayable := out.Body == nil || out.Body == http.NoBody || out.GetBody != nil
		d := frontdoor.Decide(frontdoor.Attempt{Outcome: o, N: 1, Method: out.Method, Replayable: replayable})
		if ctx.Err() != nil || !d.Again || !d.SameReplica {
			return nil, &AttemptError{Outcome: o, Err: err}
		}
		if out.Body != nil && out.Body != http.NoBody {
			body, gerr := out.GetBody()
			if gerr != nil {
				return nil, &AttemptError{Outcome: o, Err: err}
			}
			out = out.Clone(ctx)
			out.Body = body
		}
	}
}

// AttemptError is a call of the member client that failed once connected:
// its Outcome says how far it got (frontdoor.NotSent, Stale, NoResponse
// or BadResponse). Failures to connect are the dialer's errors, as is.
type AttemptError struct {
	Outcome frontdoor.Outcome
	Err     error
}

func (e *AttemptError) Error() string { return e.Err.Error() }
func (e *AttemptError) Unwrap() error { return e.Err }

// exchange writes out on c and reads the answer's header. On failure, o
// says how far the call got.
func (h *MemberClient) exchange(ctx context.Context, c *memberConn, out *http.Request) (resp *http.Response, o frontdoor.Outcome, err error) {
	if !c.rdl.IsZero() || !c.wdl.IsZero() {
		// Left by the lean path.
		_ = c.nc.SetDeadline(time.Time{})
		c.rdl, c.wdl = time.Time{}, time.Time{}
	}
	// Cancelling the call unblocks the connection's reads and writes.
	aborted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.nc.SetDeadline(aLongTimeAgo)
		close(aborted)
	})
	wrote, started := false, false
	fail := func(err error) (*http.Response, frontdoor.Outcome, error) {
		if !stop() {
			<-aborted
			if cause := context.Cause(ctx); cause != nil {
				err = cause
			}
		}
		switch {
		case started:
			return nil, frontdoor.BadResponse, err
		case wrote:
			return nil, frontdoor.NoResponse, err
		case c.reused:
			return nil, frontdoor.Stale, err
		}
		return nil, frontdoor.NotSent, err
	}
	cw := c.cw
	cw.n, cw.err = 0, nil
	err = out.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	early := false
	if err != nil {
		wrote = cw.n > 0
		if !wrote || cw.err == nil {
			return fail(err)
		}
		// The member stopped taking the request: it may have answered
		// early (413, 401, a redirect) and closed. Relay that answer, as
		// http.Transport does; the connection is not reused.
		early = true
	}
	wrote = true
	trace := httptrace.ContextClientTrace(ctx)
	for {
		if _, err := c.br.Peek(1); err != nil {
			if early {
				err = cw.err
			}
			return fail(err)
		}
		started = true
		resp, err = http.ReadResponse(c.br, out)
		if err != nil {
			if early {
				err = cw.err
			}
			return fail(err)
		}
		// 1xx answers other than 101 come before the real one.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if trace != nil && trace.Got1xxResponse != nil {
				if err := trace.Got1xxResponse(resp.StatusCode, textproto.MIMEHeader(resp.Header)); err != nil {
					return fail(err)
				}
			}
			continue
		}
		break
	}
	reuse := !resp.Close && !out.Close && !early
	if resp.Body == http.NoBody {
		if !stop() {
			<-aborted
			c.nc.Close()
		} else if reuse {
			h.put(c)
		} else {
			c.nc.Close()
		}
		return resp, frontdoor.Answered, nil
	}
	resp.Body = &memberBody{h: h, c: c, rc: resp.Body, stop: stop, reuse: reuse}
	return resp, frontdoor.Answered, nil
}

// aLongTimeAgo is a deadline that unblocks every read and write at once.
var aLongTimeAgo = time.Unix(1, 0)

// countingWriter counts the bytes that reached the connection, and keeps
// the connection's write error (to tell it from a failure to read the
// request's body).
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	if err != nil {
		cw.err = err
	}
	return n, err
}

// memberBody is an answer's body: it gives the connection back to the pool
// once read to its end, and closes it when the body is closed before (or
// the call was cancelled).
type memberBody struct {
	h     *MemberClient
	c     *memberConn
	rc    io.ReadCloser
	stop  func() bool
	reuse bool

	mu   sync.Mutex
	done bool
}

func (b *memberBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

func (b *memberBody) Close() error {
	b.finish(false)
	return nil
}

// finish releases the connection once: kept when the body was read to
// its end on a connection that stays open, closed otherwise.
func (b *memberBody) finish(eof bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if b.stop() && eof && b.reuse {
		b.h.put(b.c)
		return
	}
	b.c.nc.Close()
}
