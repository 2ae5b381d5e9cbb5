package httpdoor

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
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

// newUpstream makes the front door's transports. With rtls, TLS
// connections to https:// members are made with the *certs.Client it gives
// at each dial (offering h2 by ALPN only on the HTTP/2 transport); without,
// with http.Transport's own TLS client (the system roots).
func newUpstream(s *Server, dial func(ctx context.Context, network, addr string) (net.Conn, error), rtls func() *certs.Client) *upstream {
	d := &dialer{dial: dial}
	if d.dial == nil {
		d.dial = (&net.Dialer{}).DialContext
	}
	p1 := new(http.Protocols)
	p1.SetHTTP1(true)
	p2 := new(http.Protocols)
	p2.SetUnencryptedHTTP2(true)
	p2.SetHTTP2(true)
	h1, h2 := newTransport(d, p1), newTransport(d, p2)
	if rtls != nil {
		h1.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return rtls().DialTLS(d.dialMember, "http/1.1")(ctx, network, addr)
		}
		h2.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return rtls().DialTLS(d.dialMember, "h2", "http/1.1")(ctx, network, addr)
		}
	}
	return &upstream{s: s, h1: h1, h2: h2, fast: lean.NewMemberClient(d.dialMember)}
}

func newTransport(d *dialer, p *http.Protocols) *http.Transport {
	return &http.Transport{
		// Never through an environment proxy: replicas are addressed
		// directly.
		Proxy:                 nil,
		DialContext:           d.dialMember,
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
// After each attempt the attempt policy (frontdoor.Decide) says whether
// the call goes again to another member, and whether the member failed.
func (u *upstream) RoundTrip(out *http.Request) (*http.Response, error) {
	c := callFrom(out.Context())
	if c == nil || c.m == nil {
		return nil, errors.New("httpdoor: proxied request without a member")
	}
	for n := 1; ; n++ {
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
			d := frontdoor.Decide(frontdoor.Attempt{Outcome: frontdoor.Answered, N: n, Failed: res.StatusCode >= 500})
			c.observe(m, latency, d.ReplicaFailed)
			m.Counters.Proxied.Add(1)
			c.responded(res)
			return res, nil
		}
		ctx := out.Context()
		o := c.outcome(ctx, err)
		d := frontdoor.Decide(frontdoor.Attempt{Outcome: o, N: n, Method: out.Method, Retry: c.snap.Retry, Replayable: !c.body.Load().wasRead()})
		if d.ReplicaFailed {
			c.observe(m, latency, true)
		}
		if !d.Again || d.SameReplica {
			if o != frontdoor.NotSent {
				m.Counters.Proxied.Add(1)
			}
			if d.Answer == frontdoor.AnswerUnreachable {
				c.tried = append(c.tried, m)
				c.release()
				return nil, frontdoor.Unreachable(frontdoor.ErrNoReplica, c.tried, err)
			}
			return nil, err
		}
		// Another member.
		c.tried = append(c.tried, m)
		c.release()
		if c.pinned { // never elsewhere
			if o == frontdoor.NotSent {
				return nil, lean.PinnedUnreachable(c.dec, err)
			}
			return nil, err
		}
		next, perr := u.s.acquire(c.snap, &c.req, c.tried, frontdoor.Client{Done: ctx.Done()})
		if perr != nil {
			if o == frontdoor.NotSent {
				return nil, frontdoor.Unreachable(perr, c.tried, err)
			}
			return nil, err
		}
		c.take(next)
		target, terr := targetURL(next, c.in)
		if terr != nil {
			return nil, terr
		}
		u.s.log.Debug("retrying call on another replica", "failed", m.ID(), "replica", next.ID(), "outcome", o, "err", err)
		out = out.WithContext(ctx)
		out.URL = target
	}
}

// outcome classifies the failed attempt err of the call for the attempt
// policy. What http.Transport returns (https members, upgrades, Expect,
// HTTP/2) does not say whether the call ran: BadResponse, never replayed.
func (c *call) outcome(ctx context.Context, err error) frontdoor.Outcome {
	var ae *lean.AttemptError
	switch {
	case ctx.Err() != nil && !errors.Is(context.Cause(ctx), frontdoor.ErrCallTimeout):
		return frontdoor.ClientGone
	case ctx.Err() != nil && c.body.Load().stalled():
		return frontdoor.ClientTimeout
	case ctx.Err() != nil:
		return frontdoor.ReplicaTimeout
	case isDialError(err):
		return frontdoor.NotSent
	case errors.As(err, &ae):
		return ae.Outcome
	}
	return frontdoor.BadResponse
}

// dialer dials members with the connect timeout of the call that asked
// for the connection, and marks its failures as dial errors.
type dialer struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (d *dialer) dialMember(ctx context.Context, network, addr string) (net.Conn, error) {
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
	conn, err := d.dial(ctx, network, addr)
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
// read (a body that was read cannot be sent again) and whether the client
// stalled in it (a read ran into the deadline the call's timer sets). Read
// runs on the transport's goroutines, hence the atomics.
type bodyGuard struct {
	rc      io.ReadCloser
	read    atomic.Bool
	reading atomic.Bool // a Read waits for the client
	stall   atomic.Bool
}

func (b *bodyGuard) Read(p []byte) (int, error) {
	b.read.Store(true)
	b.reading.Store(true)
	n, err := b.rc.Read(p)
	b.reading.Store(false)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.stall.Store(true)
	}
	return n, err
}

// timedOut records, when the call's timer fires, whether the transport
// was then waiting for the client's body: the client's side of the call
// timed out, not the replica's.
func (b *bodyGuard) timedOut() {
	if b != nil && b.reading.Load() {
		b.stall.Store(true)
	}
}

// stalled reports whether the client did not send its body in time; false
// for a nil guard (no body).
func (b *bodyGuard) stalled() bool { return b != nil && b.stall.Load() }

// Close does nothing: the transport closes the body when a dial fails, and
// the body must stay readable for the next attempt. ReverseProxy closes the
// body it wrapped when the call ends.
func (b *bodyGuard) Close() error { return nil }

// wasRead is false for a nil guard (no body).
func (b *bodyGuard) wasRead() bool { return b != nil && b.read.Load() }
