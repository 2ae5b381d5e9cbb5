package httpdoor

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// upstream is the RoundTripper of the front door's reverse proxy. It sends
// each call to the member its call state holds, over HTTP/1.1 or, for
// HTTP/2 calls that need it (gRPC, trailers), HTTP/2 — h2c with prior
// knowledge to http:// members. When the dial fails, the call provably
// never reached the member: it is sent to another one, at most maxAttempts
// members in all. Any other failure is returned as is: a call that may have
// run is never replayed.
type upstream struct {
	s      *Server
	h1, h2 *http.Transport
	fast   *lean.MemberClient
}

func newUpstream(s *Server) *upstream {
	d := &dialer{}
	p1 := new(http.Protocols)
	p1.SetHTTP1(true)
	p2 := new(http.Protocols)
	p2.SetUnencryptedHTTP2(true)
	p2.SetHTTP2(true)
	return &upstream{s: s, h1: newTransport(d, p1), h2: newTransport(d, p2), fast: lean.NewMemberClient(d.dial)}
}

func newTransport(d *dialer, p *http.Protocols) *http.Transport {
	return &http.Transport{
		// Never through an environment proxy: replicas are addressed
		// directly.
		Proxy:                 nil,
		DialContext:           d.dial,
		Protocols:             p,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       DefaultIdleTimeout,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Bodies pass through as the replica encoded them.
		DisableCompression: true,
	}
}

func (u *upstream) closeIdle() {
	u.h1.CloseIdleConnections()
	u.h2.CloseIdleConnections()
	u.fast.CloseIdle()
}

// RoundTrip implements http.RoundTripper for requests made by serveProxy.
func (u *upstream) RoundTrip(out *http.Request) (*http.Response, error) {
	c := callFrom(out.Context())
	if c == nil || c.m == nil {
		return nil, errors.New("httpdoor: proxied request without a member")
	}
	for attempt := 1; ; attempt++ {
		m := c.m
		var rt http.RoundTripper = u.h1
		switch {
		case c.h2c:
			rt = u.h2
		case u.fast.Takes(out):
			rt = u.fast
		}
		t0 := u.s.now()
		res, err := rt.RoundTrip(out)
		latency := u.s.now().Sub(t0)
		if err == nil {
			c.observe(m, latency, res.StatusCode >= 500)
			m.Counters.Proxied.Add(1)
			c.responded(res)
			return res, nil
		}
		ctx := out.Context()
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), frontdoor.ErrCallTimeout) {
			// The client went away: not the replica's failure.
			m.Counters.Proxied.Add(1)
			return nil, err
		}
		c.observe(m, latency, true)
		if !isDialError(err) || c.body.wasRead() || ctx.Err() != nil {
			m.Counters.Proxied.Add(1)
			return nil, err
		}
		// The call never left: try another member.
		c.tried = append(c.tried, m)
		c.release()
		if attempt >= frontdoor.MaxAttempts {
			return nil, frontdoor.Unreachable(frontdoor.ErrNoReplica, c.tried, err)
		}
		next, perr := u.s.acquire(c.snap, &c.req, c.tried, frontdoor.Client{Done: ctx.Done()})
		if perr != nil {
			return nil, frontdoor.Unreachable(perr, c.tried, err)
		}
		c.take(next)
		target, terr := targetURL(next, c.in)
		if terr != nil {
			return nil, terr
		}
		u.s.log.Debug("retrying call on another replica", "failed", m.ID(), "replica", next.ID(), "err", err)
		out = out.WithContext(ctx)
		out.URL = target
	}
}

// dialer dials members with the connect timeout of the call that asked
// for the connection, and marks its failures as dial errors.
type dialer struct{ d net.Dialer }

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if c := callFrom(ctx); c != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.to.Connect)
		defer cancel()
	} else if _, ok := ctx.Deadline(); !ok {
		// Not a call's dial (the lean engine bounds its own).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultConnectTimeout)
		defer cancel()
	}
	conn, err := d.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, &dialError{err: err}
	}
	return conn, nil
}

// dialError is a failure to connect to a member: nothing was sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

func isDialError(err error) bool {
	var de *dialError
	return errors.As(err, &de)
}

// bodyGuard wraps a proxied request body to tell whether any of it was
// read: a body that was read cannot be sent again. Read runs on the
// transport's goroutines, hence the atomic.
type bodyGuard struct {
	rc   io.ReadCloser
	read atomic.Bool
}

func (b *bodyGuard) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.rc.Read(p)
}

// Close does nothing: the transport closes the body when a dial fails, and
// the body must stay readable for the next attempt. ReverseProxy closes the
// body it wrapped when the call ends.
func (b *bodyGuard) Close() error { return nil }

// wasRead is false for a nil guard (no body).
func (b *bodyGuard) wasRead() bool { return b != nil && b.read.Load() }
