package giopbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// call orders one request and, when the client expects a reply, answers
// it with the replica's reply under the client's request id, or with the
// system exception an error maps to.
func (c *clientConn) call(req *giop.Request, misaligned bool) {
	rep, err := c.orderCall(req, misaligned)
	if !req.ResponseExpected() {
		if err != nil {
			c.s.log.Debug("a oneway call was not ordered", "remote", c.nc.RemoteAddr().String(), "operation", req.Operation, "err", err)
		}
		return
	}
	if err != nil {
		c.s.log.Debug("call answered with a system exception", "remote", c.nc.RemoteAddr().String(), "operation", req.Operation, "err", err)
		out := giop.ReplyTo(req, giop.StatusSystemException)
		out.SetSystemException(exceptionFor(err))
		_ = c.Send(out, c.s.opts.RequestTimeout)
		return
	}
	_ = c.SendBytes(rep, c.s.opts.RequestTimeout)
}

// orderCall orders req and returns the replica's reply, encoded, with req's
// request id.
func (c *clientConn) orderCall(req *giop.Request, misaligned bool) ([]byte, error) {
	if !c.s.ownKey(req.Target) {
		return nil, errUnknownKey
	}
	if misaligned {
		return nil, errMisaligned
	}
	session, seq, err := c.identify(req)
	if err != nil {
		return nil, err
	}
	clientID := req.RequestID
	stamp := ordered.TimeSeed{Time: c.s.opts.Now().UTC(), Seed: c.s.opts.Seed()}
	logged := *req
	ordered.SetTimeSeed(&logged, stamp)
	body, err := ordered.Encode(&logged)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnencodable, err)
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, c.s.opts.RequestTimeout)
	defer cancel()
	r, err := c.s.o.Order(ctx, replhub.Call{Session: session, Seq: seq, Request: &protocol.OrderedRequest{
		Kind: protocol.KindGIOP, Body: body, Time: stamp.Time, Seed: stamp.Seed,
	}})
	if err != nil {
		return nil, err
	}
	return replyFor(r.Body, clientID, r.Position)
}

// identify returns the session and sequence number of req: its FT_REQUEST
// service context's client_id and retention_id when it has one, else the
// connection's session and its next number.
func (c *clientConn) identify(req *giop.Request) (string, uint64, error) {
	data, ok := giop.FindServiceContext(req.ServiceContexts, ordered.ServiceFTRequest)
	if !ok {
		return c.session, c.seq.Add(1), nil
	}
	ft, err := ordered.DecodeFTRequest(data)
	if err != nil {
		return "", 0, err
	}
	return ft.ClientID, ft.Seq(), nil
}

// replyFor decodes a replica's reply (a whole GIOP Reply message) and
// re-encodes it with the client's request id.
func replyFor(body []byte, id uint32, pos uint64) ([]byte, error) {
	m, err := giop.DecodeMessage(body)
	if err != nil {
		return nil, fmt.Errorf("%w: position %d: %w", errBadReply, pos, err)
	}
	rep, ok := m.(*giop.Reply)
	if !ok {
		return nil, fmt.Errorf("%w: position %d: a %v", errBadReply, pos, m.Type())
	}
	rep.RequestID = id
	b, err := giop.EncodeMessage(rep)
	if err != nil {
		return nil, fmt.Errorf("%w: position %d: %w", errBadReply, pos, err)
	}
	return b, nil
}

// ownKey reports whether t names the group's object.
func (s *Server) ownKey(t giop.TargetAddress) bool {
	if len(s.opts.Key) == 0 {
		return true
	}
	key, err := t.Key()
	return err == nil && bytes.Equal(key, s.opts.Key)
}

// Errors of the bridge itself (the others are the Orderer's).
var (
	errUnknownKey  = errors.New("giopbridge: the request's object key names another object than the group")
	errMisaligned  = errors.New("giopbridge: GIOP 1.1 fragments that do not keep the body's alignment cannot be ordered")
	errUnencodable = errors.New("giopbridge: the request cannot be re-encoded with the bridge's service context")
	errBadReply    = errors.New("giopbridge: the replica's reply is not a GIOP Reply")
)
