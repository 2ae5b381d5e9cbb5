package giopout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// RepoIDBadInvOrder is CORBA::BAD_INV_ORDER, the answer to a call made
// when no entry is being delivered.
const RepoIDBadInvOrder = "IDL:omg.org/CORBA/BAD_INV_ORDER:1.0"

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("giopout: closed")

// Caller posts one outgoing call and returns the callee's reply; an error
// wrapping ErrNoEntry means no entry was being delivered. The agent's
// Outcall, with its replagent.ErrNoEntry wrapped as ErrNoEntry, is one.
type Caller func(ctx context.Context, c protocol.Outcall) (protocol.OutcallReply, error)

// ErrNoEntry is the Caller's error for a call made between entries.
var ErrNoEntry = errors.New("giopout: no entry is being delivered")

// Options configure a Server. The zero value is usable.
type Options struct {
	// Limits bound the messages read from the servant and the replies
	// decoded (default 16 MiB).
	Limits giop.Limits
	// CallTimeout bounds one call (default a minute).
	CallTimeout time.Duration
	// Logger receives failed calls at warn level (default: none).
	Logger *slog.Logger
}

// Server serves the GIOP listener of an agent's outgoing calls. Safe for
// concurrent use.
type Server struct {
	callee    string
	calleeRef ior.IOR
	call      Caller
	opts      Options
	log       *slog.Logger

	// ctx ends at Close, failing calls in progress.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	lns    map[net.Listener]struct{}
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// New returns a Server whose calls go to callee (a corbaloc:iiop: URL or a
// stringified IOR with an IIOP profile) through call.
func New(callee string, call Caller, opts Options) (*Server, error) {
	ref, err := ior.Parse(callee)
	if err != nil {
		return nil, fmt.Errorf("giopout: callee %q: %w", callee, err)
	}
	if _, ok := ref.IIOP(); !ok {
		return nil, fmt.Errorf("giopout: callee %q: no IIOP profile (TAG_INTERNET_IOP), want a corbaloc:iiop: URL or an IOR with one", callee)
	}
	if call == nil {
		return nil, errors.New("giopout: a Caller is required")
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{callee: callee, calleeRef: ref, call: call, opts: opts, log: log, ctx: ctx, cancel: cancel,
		lns: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}}, nil
}

// Reference is the reference the servant calls its callee by: the
// callee's type id and object key at host and port (the listener's).
func (s *Server) Reference(host string, port uint16) ior.IOR {
	p, _ := s.calleeRef.IIOP()
	return ior.IOR{TypeID: s.calleeRef.TypeID, Profiles: []ior.Profile{ior.IIOPProfile{
		Version: ior.V12, Host: host, Port: port, ObjectKey: p.ObjectKey,
	}}}
}

// Serve accepts connections on ln until Close; it returns ErrClosed then,
// or the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrClosed
	}
	s.lns[ln] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrClosed
			}
			return fmt.Errorf("giopout: accept: %w", err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return ErrClosed
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(nc)
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
			_ = nc.Close()
		}()
	}
}

// Close stops the listeners and the connections, failing calls in
// progress, and waits until Serve and the connections' goroutines are
// done.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	for ln := range s.lns {
		_ = ln.Close()
	}
	for nc := range s.conns {
		_ = nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// serveConn answers the messages of one connection, one at a time.
func (s *Server) serveConn(nc net.Conn) {
	r, w := wire.NewReader(nc, s.opts.Limits), wire.NewWriter(nc)
	for {
		raw, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("the servant's connection failed", "err", err)
			}
			return
		}
		m, err := s.opts.Limits.DecodeMessage(raw)
		if err != nil {
			_ = w.Write(&giop.MessageError{Envelope: giop.Envelope{Version: r.Version()}})
			return
		}
		switch m := m.(type) {
		case *giop.Request:
			rep := s.serveRequest(raw, m)
			if rep != nil && m.ResponseExpected() {
				if err := w.Write(rep); err != nil {
					return
				}
			}
		case *giop.LocateRequest:
			if err := w.Write(giop.LocateReplyTo(m, giop.LocateObjectHere)); err != nil {
				return
			}
		case *giop.CloseConnection:
			return
		case *giop.CancelRequest:
			// Calls of a connection run one at a time: nothing to cancel.
		default:
			_ = w.Write(&giop.MessageError{Envelope: giop.Envelope{Version: giop.EnvelopeOf(m).Version}})
			return
		}
	}
}

// serveRequest makes one outgoing call and returns the reply to write.
func (s *Server) serveRequest(raw []byte, req *giop.Request) *giop.Reply {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.CallTimeout)
	defer cancel()
	// raw is whole: wire.Reader joins fragments into one message.
	out, err := s.call(ctx, protocol.Outcall{Method: protocol.OutcallMethodGIOP, URL: s.callee, Body: raw})
	switch {
	case errors.Is(err, ErrNoEntry):
		s.log.Warn("the servant called its callee while no entry was being delivered: refused with BAD_INV_ORDER", "operation", req.Operation)
		return sysex(req, RepoIDBadInvOrder, giop.CompletedNo)
	case err != nil:
		s.log.Warn("an outgoing GIOP call reached no balancer", "operation", req.Operation, "err", err)
		return sysex(req, giop.RepoIDTransient, giop.CompletedMaybe)
	case out.Error != "" || out.Status != 200:
		s.log.Warn("an outgoing GIOP call failed", "operation", req.Operation, "status", out.Status, "err", out.Error)
		return sysex(req, giop.RepoIDTransient, giop.CompletedMaybe)
	}
	m, err := s.opts.Limits.DecodeMessage(out.Body)
	rep, ok := m.(*giop.Reply)
	if err != nil || !ok {
		s.log.Warn("the callee's answer to an outgoing GIOP call is not a GIOP Reply", "operation", req.Operation, "err", err)
		return sysex(req, giop.RepoIDTransient, giop.CompletedMaybe)
	}
	rep.RequestID = req.RequestID
	return rep
}

// sysex is a system exception reply to req.
func sysex(req *giop.Request, repoID string, completed giop.CompletionStatus) *giop.Reply {
	rep := giop.ReplyTo(req, giop.StatusSystemException)
	rep.SetSystemException(giop.SystemException{RepositoryID: repoID, Completed: completed})
	return rep
}
