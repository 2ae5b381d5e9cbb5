package giopdoor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// probeRequestID is the request id of a probe's LocateRequest (alone on
// its connection).
const probeRequestID = 1

// Locate asks the object ref names whether it is there: a LocateRequest
// for its object key, in the GIOP version of its IIOP profile (1.2 at
// most), on a connection of its own, closed afterwards. It returns nil when
// the answer is OBJECT_HERE, OBJECT_FORWARD or OBJECT_FORWARD_PERM, and an
// error naming what happened otherwise. ctx bounds the whole exchange;
// dial opens the connection (a net.Dialer's when nil). The balancer's
// health probes of GIOP replicas use it.
func Locate(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), ref ior.IOR) error {
	p, ok := ref.IIOP()
	if !ok {
		return errNoReference
	}
	v := giop.Version{Major: 1, Minor: min(p.Version.Minor, 2)}
	if p.Version.Major != 1 {
		v = giop.V12
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", p.Address().HostPort())
	if err != nil {
		return err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	req := &giop.LocateRequest{Envelope: giop.Envelope{Version: v, Order: cdr.BigEndian}, RequestID: probeRequestID, Target: giop.KeyTarget(p.ObjectKey)}
	b, err := encode(req)
	if err != nil {
		return err
	}
	if _, err := nc.Write(b); err != nil {
		return err
	}
	r := wire.NewReader(nc, giop.Limits{})
	for {
		raw, err := r.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		m, err := giop.DecodeMessage(raw)
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *giop.LocateReply:
			if m.RequestID != probeRequestID {
				continue
			}
			switch m.Status {
			case giop.LocateObjectHere, giop.LocateObjectForward, giop.LocateObjectForwardPerm:
				return nil
			case giop.LocateSystemException:
				if ex, err := m.SystemException(); err == nil {
					return fmt.Errorf("giopdoor: locate answered %s", ex.Name())
				}
			}
			return fmt.Errorf("giopdoor: locate answered %v", m.Status)
		case *giop.CloseConnection:
			return errors.New("giopdoor: the replica closed the connection (CloseConnection)")
		case *giop.MessageError:
			return errors.New("giopdoor: the replica answered MessageError")
		}
	}
}
