package acceptloop

import (
	"errors"
	"net"
	"sync"
)

// ErrClosing is returned by Conns.Serve once Conns.Close was called.
var ErrClosing = errors.New("acceptloop: closing")

// Conns is the bookkeeping of a server built on Serve: the listeners it
// accepts on, the connections it serves, and whether it is closing. Safe
// for concurrent use; the zero value is ready. Must not be copied.
type Conns[C comparable] struct {
	mu      sync.Mutex
	closing bool
	lns     map[net.Listener]struct{}
	conns   map[C]struct{}
	wg      sync.WaitGroup
}

// Serve accepts connections on ln with Serve until Close or until ln fails
// for good. Each connection nc becomes newConn(nc), tracked until
// serve(c), run on a goroutine of its own, returns. It returns
// opts.Closed (ErrClosing by default) once Close was called (closing ln
// when called after it), else ln's error.
func (s *Conns[C]) Serve(ln net.Listener, newConn func(net.Conn) C, serve func(C), opts Options) error {
	closed := opts.Closed
	if closed == nil {
		closed = ErrClosing
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = ln.Close()
		return closed
	}
	if s.lns == nil {
		s.lns = map[net.Listener]struct{}{}
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
	}()
	err := Serve(ln, func(nc net.Conn) error {
		c := newConn(nc)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			_ = nc.Close()
			return ErrClosing
		}
		if s.conns == nil {
			s.conns = map[C]struct{}{}
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
		return nil
	}, opts)
	if s.Closing() {
		return closed
	}
	return err
}

// Close stops accepting: it closes the listeners, and Serve hands no new
// connection over from now on. The connections being served are left to
// the caller (see List and Wait).
func (s *Conns[C]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	for ln := range s.lns {
		_ = ln.Close()
	}
}

// Closing reports whether Close was called.
func (s *Conns[C]) Closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// List returns the connections being served.
func (s *Conns[C]) List() []C {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]C, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Wait waits until every connection's serve has returned.
func (s *Conns[C]) Wait() { s.wg.Wait() }

// Done returns a channel closed once every connection's serve has
// returned (a goroutine waits for them until then).
func (s *Conns[C]) Done() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	return done
}
