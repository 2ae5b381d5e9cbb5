package giopdoor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopconn"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// Upstream pooling: the calls of every client connection to one member,
// in one GIOP version, share up to maxConnsPerUpstream connections; a new
// one is opened when every open one carries busyPerConn calls or more.
const (
	maxConnsPerUpstream = 4
	busyPerConn         = 32
)

// errNotSent: the call was not written (the connection was closing or the
// write failed before its first byte) and may go elsewhere.
var errNotSent = errors.New("giopdoor: call not sent")

// upstreams is the pool of connections to members. Safe for concurrent
// use.
type upstreams struct {
	s *Server

	mu     sync.Mutex
	pools  map[poolKey][]*upConn
	closed bool
}

// poolKey names the connections to one endpoint in one GIOP version: GIOP
// versions are not mixed on a connection.
type poolKey struct {
	addr    string
	version giop.Version
}

func newUpstreams(s *Server) *upstreams {
	return &upstreams{s: s, pools: map[poolKey][]*upConn{}}
}

// get returns a connection to m for version v: the least busy open one, or
// a new one when all are busy and the pool has room.
func (u *upstreams) get(m *frontdoor.Member, v giop.Version, to frontdoor.Timeouts) (*upConn, error) {
	p, ok := m.IOR.IIOP()
	if !ok {
		return nil, errNoReference
	}
	key := poolKey{addr: p.Address().HostPort(), version: v}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, errNotSent
	}
	var best *upConn
	bestLoad := 0
	for _, c := range u.pools[key] {
		if n, open := c.load(); open && (best == nil || n < bestLoad) {
			best, bestLoad = c, n
		}
	}
	if best != nil && (bestLoad < busyPerConn || len(u.pools[key]) >= maxConnsPerUpstream) {
		u.mu.Unlock()
		return best, nil
	}
	u.mu.Unlock()

	ctx := context.Background()
	if to.Connect > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, to.Connect)
		defer cancel()
	}
	nc, err := u.s.dial(ctx, "tcp", key.addr)
	if err != nil {
		return nil, fmt.Errorf("giopdoor: connecting to %s: %w", key.addr, err)
	}
	c := &upConn{u: u, key: key, nc: nc, r: newMsgReader(nc, nil, nil), pending: map[uint32]*call{}}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		_ = nc.Close()
		return nil, errNotSent
	}
	u.pools[key] = append(u.pools[key], c)
	u.mu.Unlock()
	go c.readLoop()
	return c, nil
}

func (u *upstreams) remove(c *upConn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	list := u.pools[c.key]
	for i, x := range list {
		if x == c {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(u.pools, c.key)
	} else {
		u.pools[c.key] = list
	}
}

// closeAll closes every connection (calls still on them get COMM_FAILURE).
func (u *upstreams) closeAll() {
	u.mu.Lock()
	u.closed = true
	var all []*upConn
	for _, list := range u.pools {
		all = append(all, list...)
	}
	u.mu.Unlock()
	for _, c := range all {
		c.close(false)
	}
}

// upConn is one connection to a member, carrying the calls of many
// clients under request ids of its own.
type upConn struct {
	u   *upstreams
	key poolKey
	nc  net.Conn
	r   *msgReader

	wmu sync.Mutex

	mu      sync.Mutex
	pending map[uint32]*call
	nextID  uint32
	closed  bool
}

// load is the number of calls awaiting a reply, and whether the
// connection takes new ones.
func (c *upConn) load() (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending), !c.closed
}

// send writes cl's request under a fresh request id, its target rewritten
// to the member's object key. errNotSent means nothing was written.
func (c *upConn) send(cl *call) error {
	m := cl.currentMember()
	if m == nil {
		return errNotSent
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errNotSent
	}
	c.nextID++
	id := c.nextID
	if !cl.oneway {
		c.pending[id] = cl
	}
	c.mu.Unlock()

	b, err := rewriteRequest(cl.req, id, m.IOR, cl.addressingMode())
	if err != nil {
		c.forget(id)
		return err
	}
	cl.sent(c, id)
	c.wmu.Lock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(cl.to.Request))
	n, err := c.nc.Write(b)
	c.wmu.Unlock()
	if err != nil {
		c.forget(id)
		cl.unsent(c)
		c.close(false)
		if n == 0 {
			return errNotSent
		}
		return err
	}
	if cl.oneway {
		cl.onewaySent(m)
	}
	return nil
}

// forget drops a call from the pending table (its reply, if any, is then
// discarded).
func (c *upConn) forget(id uint32) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// cancel sends CancelRequest for id, best effort.
func (c *upConn) cancel(v giop.Version, o cdr.ByteOrder, id uint32) {
	b, err := encode(&giop.CancelRequest{Envelope: giop.Envelope{Version: v, Order: o}, RequestID: id})
	if err != nil {
		return
	}
	c.wmu.Lock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(giopconn.CloseWriteTimeout))
	_, _ = c.nc.Write(b)
	c.wmu.Unlock()
}

// close closes the connection once and hands its pending calls back:
// graceful (the member sent CloseConnection, so none of them ran) sends
// them again, otherwise they fail.
func (c *upConn) close(graceful bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	pending := c.pending
	c.pending = map[uint32]*call{}
	c.mu.Unlock()
	c.u.remove(c)
	_ = c.nc.Close()
	for _, cl := range pending {
		cl.closedUpstream(c, graceful)
	}
}

// closeIfIdle closes the connection when no call awaits a reply.
func (c *upConn) closeIfIdle() bool {
	c.mu.Lock()
	idle := len(c.pending) == 0
	if idle {
		c.closed = true
	}
	c.mu.Unlock()
	if idle {
		c.u.remove(c)
		_ = c.nc.Close()
	}
	return idle
}

// readLoop reads the member's messages and routes replies to their calls.
func (c *upConn) readLoop() {
	defer c.r.close()
	for {
		snap := c.u.s.g.Snapshot()
		to := frontdoor.TimeoutsOf(snap.Timeouts)
		whole, _, misaligned, hdr, err := c.r.next(to.Idle, to.Request, maxMessageSize(snap))
		if err != nil {
			var pe *protocolError
			switch {
			case errors.Is(err, wire.ErrIdle):
				if c.closeIfIdle() {
					return
				}
				continue
			case errors.As(err, &pe):
				c.u.s.log.Debug("bad GIOP message from a replica", "addr", c.key.addr, "err", err)
				c.abortWith(hdr.Version, hdr.Order)
			default:
				c.close(false)
			}
			return
		}
		if whole == nil {
			continue
		}
		switch m := whole.(type) {
		case *giop.Reply:
			c.mu.Lock()
			cl := c.pending[m.RequestID]
			delete(c.pending, m.RequestID)
			c.mu.Unlock()
			switch {
			case cl == nil:
				// Cancelled, timed out or abandoned: dropped.
			case misaligned:
				cl.finish(cl.currentMember(), errUpstreamLost, cl.decide(frontdoor.BadResponse).ReplicaFailed)
			default:
				cl.reply(c, m)
			}
		case *giop.CloseConnection:
			c.close(true)
			return
		case *giop.LocateReply:
			// The proxy sends no LocateRequests; nothing waits for it.
		default:
			// MessageError, or a message a server does not send (no
			// bidirectional GIOP): the connection is done.
			c.u.s.log.Debug("replica sent "+whole.Type().String()+"; closing the connection", "addr", c.key.addr)
			c.close(false)
			return
		}
	}
}

// abortWith answers a replica's malformed message with MessageError and
// closes the connection.
func (c *upConn) abortWith(v giop.Version, o cdr.ByteOrder) {
	if !v.Supported() {
		v = giop.Highest
	}
	c.wmu.Lock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(giopconn.CloseWriteTimeout))
	_, _ = c.nc.Write(giopconn.MessageError(v, o))
	c.wmu.Unlock()
	c.close(false)
}

// rewriteRequest is req as sent to a member: request id id, the target the
// member's object key (or, when the member asked for it, its profile or
// whole reference), not fragmented. A GIOP 1.0 or 1.1 header whose length
// changes by other than a multiple of 8 would shift the body's alignment;
// the deprecated requesting_principal, which ORBs ignore, is then padded
// with zeros to keep it.
func rewriteRequest(req *giop.Request, id uint32, ref *ior.IOR, mode giop.AddressingDisposition) ([]byte, error) {
	p, ok := ref.IIOP()
	if !ok {
		return nil, errNoReference
	}
	out := *req
	out.RequestID = id
	out.MoreFragments = false
	out.Target = giop.KeyTarget(p.ObjectKey)
	if req.Version == giop.V12 {
		switch mode {
		case giop.ProfileAddr:
			out.Target = giop.TargetAddress{Disposition: giop.ProfileAddr, Profile: p}
		case giop.ReferenceAddr:
			idx := 0
			for i, pr := range ref.Profiles {
				if _, ok := pr.(ior.IIOPProfile); ok {
					idx = i
					break
				}
			}
			out.Target = giop.TargetAddress{Disposition: giop.ReferenceAddr, Reference: giop.IORAddressingInfo{SelectedProfileIndex: uint32(idx), IOR: *ref}}
		}
	}
	b, err := encode(&out)
	if err == nil || !errors.Is(err, giop.ErrBodyMisaligned) || req.Version == giop.V12 {
		return b, err
	}
	for pad := 1; pad < 8; pad++ {
		out.Principal = append(append(make([]byte, 0, len(req.Principal)+pad), req.Principal...), make([]byte, pad)...)
		if b, err = encode(&out); err == nil {
			return b, nil
		}
	}
	return nil, err
}
