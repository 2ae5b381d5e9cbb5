package tcpdoor

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
	proxyproto "github.com/pires/go-proxyproto"
)

// conn is one client connection and, once connected, its replica's.
type conn struct {
	s      *Server
	nc     net.Conn
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	up     net.Conn
	closed bool
}

func (s *Server) newConn(nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{s: s, nc: nc, ctx: ctx, cancel: cancel}
}

// abort closes both sides of the connection, once; a dial in progress is
// cancelled. Safe for concurrent use.
func (c *conn) abort() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	up := c.up
	c.mu.Unlock()
	c.cancel()
	_ = c.nc.Close()
	if up != nil {
		_ = up.Close()
	}
}

// setUp records the replica's connection; false (closing it) when the
// connection was aborted meanwhile.
func (c *conn) setUp(up net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = up.Close()
		return false
	}
	c.up = up
	return true
}

// serve proxies the connection and closes it.
func (c *conn) serve() {
	defer c.s.active.Add(-1)
	defer c.abort()
	snap := c.s.g.Snapshot()
	to := frontdoor.TimeoutsOf(snap.Timeouts)
	client, local := c.nc.RemoteAddr(), c.nc.LocalAddr()
	var early []byte
	trusted := c.s.trustedPeer(snap.TCP.ProxyProtocol.Trusted, client)
	if trusted {
		h, rest, err := readProxyHeader(c.nc, to.Connect, c.s.now())
		if err != nil {
			refuse(snap, conntable.RefuseProxyHeader)
			c.s.log.Debug("tcp front door: refused a trusted peer's connection", "remote", client.String(), "err", err)
			return
		}
		if h.Command == proxyproto.PROXY && h.SourceAddr != nil {
			client, local = h.SourceAddr, h.DestinationAddr
		}
		early = rest
	}
	clientIP := hostOf(client)

	var dec frontdoor.AffinityDecision
	var fixed *frontdoor.Member
	if snap.Affinity != nil {
		dec = snap.Affinity.RouteConn(clientIP)
		if dec.Gone {
			refuse(snap, conntable.RefuseAffinity)
			return
		}
		if dec.Replica != "" {
			m := snap.Members[dec.Replica]
			if m == nil || m.State != protocol.StateActive || !acquireMember(m, snap.MaxInflight) {
				refuse(snap, conntable.RefuseAffinity)
				return
			}
			fixed = m
		}
	}

	m, up, connect, ok := c.connect(snap, fixed, clientIP, to.Connect)
	if !ok {
		return
	}
	defer m.Release()
	if !c.setUp(up) {
		return
	}
	if _, planned := snap.Planned[clientIP]; planned && fixed == nil {
		// The connection carried out the client's planned move (Pick
		// honours it): the analyzer completes the move.
		c.s.g.Bound(m, clientIP, true)
	}
	if v := proxyVersion(snap.TCP.ProxyProtocol.Send); v != 0 || len(early) > 0 {
		if !c.sendFirst(up, v, client, local, early, to.Connect) {
			c.s.g.Observe(m, connect, true)
			return
		}
	}
	now := c.s.now()
	table := snap.Conns
	if table == nil { // a snapshot without a table: the entry is kept, unlisted
		table = conntable.New()
	}
	e := table.Add(client.String(), m.ID(), m.Address, now, c.abort)
	defer table.Remove(e)
	e.AddIn(int64(len(early)), now)
	if snap.Affinity != nil {
		snap.Affinity.Opened(dec, m.ID())
		defer snap.Affinity.Closed(dec, m.ID())
	}
	m.Counters.Proxied.Add(1)
	guard := !trusted && len(snap.TCP.ProxyProtocol.Trusted) > 0
	p := newPipe(c, up, e, to.Idle, snap.TCP.MaxConnectionAge.D(), guard)
	end := p.run()
	if end == endProxyHeader {
		refuse(snap, conntable.RefuseProxyHeader)
		c.s.log.Debug("tcp front door: closed an untrusted peer's connection that began with a PROXY header", "remote", client.String())
	}
	// A replica that took bytes and answered nothing before the idle
	// timeout, or reset the connection, failed the call (passive health).
	failed := e.BytesIn() > 0 && e.BytesOut() == 0 && (end == endIdle || end == endReplicaError)
	c.s.g.Observe(m, connect, failed)
}

// connect picks a replica and connects to it; on a failed connect it tries
// the next (nothing was sent), as frontdoor.Decide says for a call that
// provably did not run. fixed, when not nil, is the only replica allowed
// (affinity), already acquired. It returns the acquired member, its
// connection and how long the connect took; ok false when the connection
// was refused (and counted).
func (c *conn) connect(snap *frontdoor.Snapshot, fixed *frontdoor.Member, clientIP string, timeout time.Duration) (*frontdoor.Member, net.Conn, time.Duration, bool) {
	req := strategy.Request{Client: clientIP}
	if snap.Key.Source == strategy.KeyClientAddress {
		req.Key = clientIP
	}
	var tried []*frontdoor.Member
	for n := 1; ; n++ {
		m := fixed
		if m == nil {
			var err error
			m, err = snap.Acquire(&req, tried, c.s.spill.Add(1))
			if err != nil {
				reason := conntable.RefuseNoReplica
				if errors.Is(err, frontdoor.ErrOverloaded) {
					reason = conntable.RefuseReplicaLimit
				}
				refuse(snap, reason)
				return nil, nil, 0, false
			}
		}
		start := c.s.now()
		ctx, cancel := context.WithTimeout(c.ctx, timeout)
		up, err := c.s.dial(ctx, "tcp", m.Address)
		cancel()
		took := c.s.now().Sub(start)
		if err == nil {
			return m, up, took, true
		}
		m.Release()
		if c.ctx.Err() != nil {
			refuse(snap, conntable.RefuseDraining)
			return nil, nil, 0, false
		}
		c.s.g.Observe(m, took, true)
		c.s.log.Debug("tcp front door: connect failed", "replica", m.ID(), "err", err)
		tried = append(tried, m)
		d := frontdoor.Decide(frontdoor.Attempt{Outcome: frontdoor.NotSent, N: n, Replayable: true})
		if fixed != nil || !d.Again {
			refuse(snap, conntable.RefuseNoReplica)
			return nil, nil, 0, false
		}
	}
}

// sendFirst writes what goes to the replica before the copy starts: the
// PROXY header (v 1 or 2; 0 none) and the client's bytes read past its own
// PROXY header.
func (c *conn) sendFirst(up net.Conn, v byte, client, local net.Addr, early []byte, timeout time.Duration) bool {
	_ = up.SetWriteDeadline(c.s.now().Add(timeout))
	if v != 0 {
		if err := writeProxyHeader(up, v, client, local); err != nil {
			return false
		}
	}
	if len(early) > 0 {
		if _, err := up.Write(early); err != nil {
			return false
		}
	}
	return up.SetWriteDeadline(time.Time{}) == nil
}

// acquireMember counts a connection on m unless it is at limit (0: none).
func acquireMember(m *frontdoor.Member, limit int) bool {
	n := m.Replica.Live.Inflight.Add(1)
	if limit > 0 && n > int64(limit) {
		m.Replica.Live.Inflight.Add(-1)
		return false
	}
	return true
}

// hostOf is the IP address of a (the host part of its string form).
func hostOf(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
