package balancer

import (
	"context"
	"fmt"
	"slices"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopdeliver"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// GIOP outcalls (Method protocol.OutcallMethodGIOP): a replicated
// servant's outgoing GIOP Request, which its agent took on its GIOP
// listener. The balancer sends the first copy of a key to the callee over
// a connection of its own, with the key carried by the FT_REQUEST service
// context (IOP 13): client_id "<group>/<position>", retention_id the
// index, so that a replicated GIOP callee (whose bridge deduplicates by
// FT_REQUEST) applies it once. The callee's Reply is the outcall's reply.

// checkGIOPOutcall validates a GIOP outcall: its URL must be a reference
// with an IIOP profile, its body a whole GIOP Request.
func checkGIOPOutcall(c protocol.Outcall) error {
	r, err := ior.Parse(c.URL)
	if err != nil {
		return &protocol.FieldError{Field: "url", Value: c.URL, Allowed: "with method GIOP must be a corbaloc:iiop: URL or a stringified IOR: " + err.Error()}
	}
	if _, ok := r.IIOP(); !ok {
		return &protocol.FieldError{Field: "url", Value: c.URL, Allowed: "with method GIOP must be a reference with an IIOP profile"}
	}
	if _, err := decodeGIOPOutcall(c.Body); err != nil {
		return &protocol.FieldError{Field: "body", Value: fmt.Sprintf("%d bytes", len(c.Body)), Allowed: "with method GIOP must be a whole GIOP Request message: " + err.Error()}
	}
	return nil
}

// decodeGIOPOutcall decodes the body of a GIOP outcall.
func decodeGIOPOutcall(b []byte) (*giop.Request, error) {
	m, err := giop.Limits{}.DecodeMessage(b)
	if err != nil {
		return nil, err
	}
	r, ok := m.(*giop.Request)
	if !ok || r.MoreFragments {
		return nil, fmt.Errorf("a GIOP %v (more fragments %v), want a whole Request", m.Type(), giop.EnvelopeOf(m).MoreFragments)
	}
	return r, nil
}

// forwardGIOPOutcall sends the first copy of a GIOP outcall to its callee
// and returns its Reply (status 200, the whole message as body, with the
// request id the copy's Request had). A oneway Request is sent as
// SYNC_WITH_TARGET, so the reply says it ran. A LOCATION_FORWARD is
// followed once.
func (g *group) forwardGIOPOutcall(ctx context.Context, key string, c protocol.Outcall) (protocol.OutcallReply, error) {
	pos, index, err := protocol.ParseOutcallKey(key, g.name)
	if err != nil {
		return protocol.OutcallReply{}, err
	}
	req, err := decodeGIOPOutcall(c.Body)
	if err != nil {
		return protocol.OutcallReply{}, err
	}
	ft := ordered.FTRequest{ClientID: fmt.Sprintf("%s/%d", g.name, pos), RetentionID: int32(uint32(index))}
	req.ServiceContexts = append(slices.DeleteFunc(slices.Clone(req.ServiceContexts), func(sc giop.ServiceContext) bool {
		return sc.ID == ordered.ServiceFTRequest // the servant ORB's own would differ across replicas
	}), giop.ServiceContext{ID: ordered.ServiceFTRequest, Data: ft.Encode(req.Order)})
	b, err := ordered.Encode(req)
	if err != nil {
		return protocol.OutcallReply{}, err
	}
	d, err := giopdeliver.New(c.URL, giopdeliver.Options{Dial: g.b.opts.Dial, Limits: giop.Limits{MaxMessageSize: MaxOutcallReplyBytes}})
	if err != nil {
		return protocol.OutcallReply{}, err
	}
	defer d.Close()
	rep, err := d.Deliver(ctx, pos, &protocol.OrderedRequest{Kind: protocol.KindGIOP, Body: b})
	if err != nil {
		return protocol.OutcallReply{}, fmt.Errorf("calling %s: %w", c.URL, err)
	}
	return protocol.OutcallReply{Status: 200, Body: rep.Body}, nil
}
