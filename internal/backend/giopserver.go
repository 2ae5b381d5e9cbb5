package backend

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// giopServer is the connection side of the GIOP servants (GIOPPrime,
// GIOPCounter): it accepts connections, reads GIOP 1.0-1.2 messages in
// either byte order, runs up to maxInflight requests of each connection at
// once through dispatch, answers LocateRequest for key, and shuts down with
// CloseConnection. The servant supplies dispatch (the object's operations);
// everything else is here. Its zero conns are ready; the other fields are
// set once before serve. Safe for concurrent use.
type giopServer struct {
	key         []byte
	limits      giop.Limits
	maxInflight int
	log         *slog.Logger
	// dispatch runs one request for the client (its remote address) and
	// returns the reply, which is dropped for a oneway call.
	dispatch func(req *giop.Request, client string) *giop.Reply

	// conns are the listeners and connections.
	conns acceptloop.Conns[*giopConn]
}

// giopConn is one client connection of a giopServer.
type giopConn struct {
	nc net.Conn
	w  *wire.Writer
	// busy counts the requests running; Shutdown closes idle
	// connections at once, busy ones when their last request is answered.
	busy atomic.Int64
	// closing is set by Shutdown before it sends CloseConnection:
	// requests read after it are not run (the client sends them again).
	closing atomic.Bool
	// sent is set by Shutdown once CloseConnection is written: from then
	// on the last request to end closes the connection (not before, or
	// the client could see the connection end without CloseConnection).
	sent atomic.Bool
	// version is the GIOP version of the client's last message, the one
	// CloseConnection is sent in.
	version atomic.Value // giop.Version
}

// Serve accepts connections on ln until Shutdown, and returns
// ErrGIOPServerClosed then. Temporary accept errors (out of file
// descriptors, say) are retried with a back-off (see package acceptloop);
// any other accept error ends Serve and is returned.
func (s *giopServer) serve(ln net.Listener) error {
	newConn := func(nc net.Conn) *giopConn {
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		return &giopConn{nc: nc, w: wire.NewWriter(nc)}
	}
	return s.conns.Serve(ln, newConn, s.serveConn, acceptloop.Options{Logger: s.log, Name: "giop backend", Closed: ErrGIOPServerClosed})
}

// Shutdown stops accepting, tells every client CloseConnection (requests
// it has not answered were not run and may be sent again), waits for the
// requests running to be answered, and closes the connections. When ctx
// ends first, the connections are closed at once and ctx's error returned.
func (s *giopServer) shutdown(ctx context.Context) error {
	s.conns.Close()
	conns := s.conns.List()
	for _, c := range conns {
		c.closing.Store(true)
		v, _ := c.version.Load().(giop.Version)
		if !v.Supported() {
			v = giop.V10
		}
		_ = c.w.Write(&giop.CloseConnection{Envelope: giop.Envelope{Version: v}})
		c.sent.Store(true)
		if c.busy.Load() == 0 {
			_ = c.nc.Close()
		}
	}
	done := s.conns.Done()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, c := range conns {
			_ = c.nc.Close()
		}
		<-done
		return ctx.Err()
	}
}

// serveConn reads c's messages until it ends: requests run on goroutines
// of their own (at most MaxInflight at once), the rest inline.
func (s *giopServer) serveConn(c *giopConn) {
	client := c.nc.RemoteAddr().String()
	slots := make(chan struct{}, s.maxInflight)
	var running sync.WaitGroup
	defer func() {
		running.Wait()
		_ = c.nc.Close()
	}()
	r := wire.NewReader(c.nc, s.limits)
	for {
		b, err := r.Next()
		if err != nil {
			if wire.IsProtocolError(err) {
				s.log.Debug("GIOP client sent bytes that are not GIOP; answered MessageError", "client", client, "err", err)
				_ = c.w.Write(&giop.MessageError{Envelope: giop.Envelope{Version: r.Version()}})
				lingerClose(c.nc)
			}
			return
		}
		m, err := s.limits.DecodeMessage(b)
		if err != nil {
			s.log.Debug("GIOP client sent a malformed message; answered MessageError", "client", client, "err", err)
			_ = c.w.Write(&giop.MessageError{Envelope: giop.Envelope{Version: r.Version()}})
			lingerClose(c.nc)
			return
		}
		c.version.Store(giop.EnvelopeOf(m).Version)
		switch m := m.(type) {
		case *giop.Request:
			if c.closing.Load() {
				continue // after CloseConnection: not run
			}
			slots <- struct{}{}
			c.busy.Add(1)
			running.Add(1)
			go func() {
				defer func() {
					if c.busy.Add(-1) == 0 && c.sent.Load() {
						_ = c.nc.Close()
					}
					<-slots
					running.Done()
				}()
				if rep := s.handle(m, client); rep != nil {
					if err := c.w.Write(rep); err != nil {
						s.log.Debug("GIOP reply not sent", "client", client, "err", err)
					}
				}
			}()
		case *giop.LocateRequest:
			rep := giop.LocateReplyTo(m, giop.LocateUnknownObject)
			if key, err := m.Target.Key(); err == nil && bytes.Equal(key, s.key) {
				rep.Status = giop.LocateObjectHere
			}
			_ = c.w.Write(rep)
		case *giop.CancelRequest:
			// The calls are short: the reply is sent anyway, which
			// the spec allows; the client drops it.
		case *giop.CloseConnection, *giop.MessageError:
			return
		default:
			// Replies, locate replies and fragments without a message
			// are not for a server.
			s.log.Debug("GIOP client sent a message a server does not accept; answered MessageError", "client", client, "type", m.Type())
			_ = c.w.Write(&giop.MessageError{Envelope: giop.EnvelopeOf(m)})
			lingerClose(c.nc)
			return
		}
	}
}

// Bounds of lingerClose.
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 64 << 10
)

// lingerClose ends the sending side of nc after a MessageError and reads
// what the client still sends (at most lingerBytes for lingerTime), so
// that closing with unread input does not reset the connection before the
// client has read the MessageError. The caller closes nc.
func lingerClose(nc net.Conn) {
	cw, ok := nc.(interface{ CloseWrite() error })
	if !ok {
		return
	}
	_ = cw.CloseWrite()
	_ = nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, lingerBytes))
}

// handle runs one request and returns its reply, nil for a oneway call.
func (s *giopServer) handle(req *giop.Request, client string) *giop.Reply {
	rep := s.dispatch(req, client)
	if !req.ResponseExpected() {
		return nil
	}
	return rep
}

// systemException is the reply to req raising the system exception
// repoID, completed as said.
func systemException(req *giop.Request, repoID string, completed giop.CompletionStatus) *giop.Reply {
	rep := giop.ReplyTo(req, giop.StatusSystemException)
	rep.SetSystemException(giop.SystemException{RepositoryID: repoID, Completed: completed})
	return rep
}
