package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Read-only calls (the group's replicated.read_only patterns) skip the
// log: each goes to one live replica, picked by the group's strategy
// among those whose applied position (Orderer.AppliedBy) is at least the
// session's last write (Orderer.LastWrite; 0 for a call without a
// session): a client reads its own writes. When every live replica is
// behind, the call waits for one to catch up: the hub says nothing when a
// replica's applied position moves, so the bridge picks again after a
// short wait, doubling from catchUpFirstWait up to catchUpMaxWait, until
// the group's request timeout, then answers 503 no_replica.
const (
	catchUpFirstWait = 2 * time.Millisecond
	catchUpMaxWait   = 50 * time.Millisecond
)

// routes are compiled read_only patterns.
type routes struct {
	patterns []string
	mux      *http.ServeMux
}

// readOnlyMark is the handler every read_only pattern is registered with:
// a request the mux gives it to is read-only.
type readOnlyMark struct{}

func (readOnlyMark) ServeHTTP(http.ResponseWriter, *http.Request) {}

// compileRoutes registers patterns in a ServeMux. Config validation
// refuses bad patterns; one that slips through (or conflicts with an
// earlier one) is logged and left out, never a panic.
func compileRoutes(patterns []string, log *slog.Logger) *routes {
	mux := http.NewServeMux()
	for _, p := range patterns {
		if err := register(mux, p); err != nil {
			log.Warn("read_only pattern left out: its calls are ordered", "pattern", p, "err", err)
		}
	}
	return &routes{patterns: slices.Clone(patterns), mux: mux}
}

// register adds pattern p to mux, turning ServeMux's panic on a bad or
// conflicting pattern into an error.
func register(mux *http.ServeMux, p string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("bridge: read_only pattern %q: %v", p, v)
		}
	}()
	mux.Handle(p, readOnlyMark{})
	return nil
}

// readOnly reports whether r matches one of the group's read_only
// patterns (ServeMux's matching: a GET pattern matches HEAD too; a path
// ServeMux would redirect does not match).
func (s *Server) readOnly(snap *frontdoor.Snapshot, r *http.Request) bool {
	pats := snap.Replicated.ReadOnly
	if len(pats) == 0 {
		return false
	}
	rt := s.routes.Load()
	if rt == nil || !slices.Equal(rt.patterns, pats) {
		rt = compileRoutes(pats, s.log)
		s.routes.Store(rt)
	}
	h, _ := rt.mux.Handler(r)
	_, ok := h.(readOnlyMark)
	return ok
}

// roCall is one read-only call being proxied, in its request's context.
type roCall struct {
	m    *frontdoor.Member
	snap *frontdoor.Snapshot
	to   frontdoor.Timeouts
	lw   *httpdoor.LogWriter
}

type roCallKey struct{}

func roCallOf(ctx context.Context) *roCall {
	c, _ := ctx.Value(roCallKey{}).(*roCall)
	return c
}

// serveReadOnly proxies a read-only call to a replica that caught up with
// the session's last write.
func (s *Server) serveReadOnly(w http.ResponseWriter, r *http.Request, snap *frontdoor.Snapshot, lw *httpdoor.LogWriter) {
	id, err := identify(r.Header, connSessionOf(r.Context()), false)
	if err != nil {
		writeError(w, r, snap, err)
		return
	}
	var last uint64
	if id.Session != "" {
		last = s.hub.LastWrite(id.Session)
	}
	to := frontdoor.TimeoutsOf(snap.Timeouts)
	ctx, cancel := context.WithTimeoutCause(r.Context(), to.Request, frontdoor.ErrCallTimeout)
	defer cancel()
	m, snap, err := s.pickCaughtUp(ctx, r, last)
	if err != nil {
		if r.Context().Err() != nil {
			lw.SetStatus(statusClientClosed)
			return
		}
		writeError(w, r, snap, err)
		return
	}
	defer m.Release()
	lw.SetReplica(m.ID())
	if m.URL == nil {
		writeError(w, r, snap, &proxyError{err: fmt.Errorf("replica %s has no usable address (%q)", m.ID(), m.Address)})
		return
	}
	c := &roCall{m: m, snap: snap, to: to, lw: lw}
	s.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, roCallKey{}, c)))
}

// pickCaughtUp picks, with the strategy of the current snapshot, a live
// replica that applied position last, and counts the call on it (release
// with Member.Release). When every live replica is behind it waits and
// picks again until ctx ends (*NotCaughtUpError). It also returns the
// snapshot it last picked on.
func (s *Server) pickCaughtUp(ctx context.Context, r *http.Request, last uint64) (*frontdoor.Member, *frontdoor.Snapshot, error) {
	wait := catchUpFirstWait
	for {
		snap := s.g.Snapshot()
		req := strategy.Request{Client: r.Header.Get(protocol.HeaderClient), Key: httpdoor.RequestKey(snap.Key, r), Path: r.URL.Path}
		behind := s.behind(snap, last)
		m, err := snap.Acquire(&req, behind, s.spill.Add(1))
		if err == nil {
			return m, snap, nil
		}
		if !errors.Is(err, frontdoor.ErrNoReplica) || len(behind) == 0 {
			return nil, snap, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, snap, &NotCaughtUpError{Position: last, Live: len(snap.Eligible)}
		case <-t.C:
		}
		wait = min(2*wait, catchUpMaxWait)
	}
}

// behind are the eligible members of snap that have not applied position
// last.
func (s *Server) behind(snap *frontdoor.Snapshot, last uint64) []*frontdoor.Member {
	if last == 0 {
		return nil
	}
	var out []*frontdoor.Member
	for _, m := range snap.Eligible {
		if s.hub.AppliedBy(m.ID()) < last {
			out = append(out, m)
		}
	}
	return out
}

// newProxy is the reverse proxy of read-only calls, over t.
func (s *Server) newProxy(t http.RoundTripper) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(roCallOf(pr.In.Context()).m.URL)
			// Append the client to the X-Forwarded-For chain it came with.
			if prior := pr.In.Header["X-Forwarded-For"]; len(prior) > 0 {
				pr.Out.Header["X-Forwarded-For"] = prior
			}
			pr.SetXForwarded()
		},
		Transport:    &observed{rt: t, s: s},
		ErrorHandler: s.proxyError,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// proxyError answers a read-only call that got no response.
func (s *Server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	c := roCallOf(ctx)
	switch {
	case errors.Is(context.Cause(ctx), frontdoor.ErrCallTimeout):
		err = frontdoor.ErrCallTimeout
	case ctx.Err() != nil:
		// The client went away (or a forced shutdown): nobody to answer.
		c.lw.SetStatus(statusClientClosed)
		return
	default:
		s.log.Warn("read-only call failed", "replica", c.m.ID(), "method", r.Method, "path", r.URL.Path, "err", err)
		err = &proxyError{err: err}
	}
	writeError(w, r, c.snap, err)
}

// observed reports each read-only call's outcome to the group and its
// strategy, as httpdoor does for proxied calls.
type observed struct {
	rt http.RoundTripper
	s  *Server
}

func (o *observed) RoundTrip(out *http.Request) (*http.Response, error) {
	c := roCallOf(out.Context())
	t0 := o.s.now()
	res, err := o.rt.RoundTrip(out)
	latency := o.s.now().Sub(t0)
	ctx := out.Context()
	if err != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), frontdoor.ErrCallTimeout) {
		// The client went away: says nothing of the replica.
		return nil, err
	}
	failed := err != nil || res.StatusCode >= 500
	c.m.Counters.Proxied.Add(1)
	o.s.g.Observe(c.m, latency, failed)
	if c.snap.Observer != nil {
		c.snap.Observer.Observe(c.m.Replica, latency, failed)
	}
	return res, err
}
