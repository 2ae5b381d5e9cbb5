package giopdeliver

import (
	"context"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Deliver sends the GIOP Request of req (the entry at position pos) to
// the servant and returns its Reply, whole, with the request id the
// entry's request had. An entry that is not a GIOP Request is an error
// naming the position; so is a servant that does not answer before ctx
// ends (the call is not abandoned silently: the connection is dropped).
func (d *Deliverer) Deliver(ctx context.Context, pos uint64, req *protocol.OrderedRequest) (protocol.ReplicaReply, error) {
	orig, err := d.decode(pos, req)
	if err != nil {
		return protocol.ReplicaReply{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rep, err := d.callLocked(ctx, func(*servantConn) *giop.Request {
		r := *orig
		if !r.ResponseExpected() {
			// A oneway call is sent SYNC_WITH_TARGET: the next entry
			// waits until it has run.
			r.ResponseFlags = giop.FlagsTwoway
		}
		return &r
	})
	if err != nil {
		return protocol.ReplicaReply{}, fmt.Errorf("giopdeliver: entry %d (%s): %w", pos, orig.Operation, err)
	}
	rep.RequestID = orig.RequestID
	b, err := giop.EncodeMessage(rep)
	if err != nil {
		return protocol.ReplicaReply{}, fmt.Errorf("giopdeliver: entry %d (%s): re-encoding the servant's reply: %w", pos, orig.Operation, err)
	}
	return protocol.ReplicaReply{Position: pos, Body: b}, nil
}

// decode returns the Request of an entry.
func (d *Deliverer) decode(pos uint64, req *protocol.OrderedRequest) (*giop.Request, error) {
	if req == nil || req.Kind != protocol.KindGIOP {
		kind := ""
		if req != nil {
			kind = req.Kind
		}
		return nil, fmt.Errorf("giopdeliver: entry %d: kind %q, want %q", pos, kind, protocol.KindGIOP)
	}
	m, err := d.opts.Limits.DecodeMessage(req.Body)
	if err != nil {
		return nil, fmt.Errorf("giopdeliver: entry %d: %w", pos, err)
	}
	r, ok := m.(*giop.Request)
	if !ok || r.MoreFragments {
		return nil, fmt.Errorf("giopdeliver: entry %d: a GIOP %v (more fragments %v), want a whole Request", pos, m.Type(), giop.EnvelopeOf(m).MoreFragments)
	}
	return r, nil
}
