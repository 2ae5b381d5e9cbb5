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
		resp, wrote, err := h.exchange(ctx, c, out)
		if err == nil {
			return resp, nil
		}
		c.nc.Close()
		// A kept-alive connection the member had closed: send the call
		// on a fresh one when it provably did not run (nothing written)
		// or is safe to repeat (idempotent, no answer read), as
		// http.Transport does.
		if !c.reused || ctx.Err() != nil || (wrote && !idempotent(out)) {
			return nil, err
		}
		if out.Body != nil && out.Body != http.NoBody {
			if out.GetBody == nil {
				return nil, err
			}
			body, gerr := out.GetBody()
			if gerr != nil {
				return nil, err
			}
			out = out.Clone(ctx)
			out.Body = body
		}
	}
}

// exchange writes out on c and reads the answer's header. wrote says
// whether any of the request may have reached the member.
func (h *MemberClient) exchange(ctx context.Context, c *memberConn, out *http.Request) (resp *http.Response, wrote bool, err error) {
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
	fail := func(err error) (*http.Response, bool, error) {
		if !stop() {
			<-aborted
			if cause := context.Cause(ctx); cause != nil {
				err = cause
			}
		}
		return nil, wrote, err
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
		return resp, true, nil
	}
	resp.Body = &memberBody{h: h, c: c, rc: resp.Body, stop: stop, reuse: reuse}
	return resp, true, nil
}

// idempotent reports whether a call may be sent again after it may have
// reached a member that answered nothing (RFC 9110 §9.2.2).
func idempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return r.Body == nil || r.Body == http.NoBody
	}
	return false
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
