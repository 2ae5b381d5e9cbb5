package backend

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
)

// EchoBufferSize is the most an echo connection reads at once. The buffer
// is borrowed from a pool only while bytes are in hand, so an idle
// connection holds none: ten thousand idle connections cost their
// goroutines and sockets, not ten thousand buffers.
const EchoBufferSize = 64 << 10

// ErrEchoClosed is returned by Echo.Serve once Shutdown was called.
var ErrEchoClosed = errors.New("backend: echo server closed")

// Echo is the TCP echo service of "fulcrum backend echo" (the replicas of
// bench tcp): every byte a client sends comes back on the same connection,
// in order. It is half-close aware: when the client closes its sending
// side, Echo writes back what it has read, closes its own sending side
// (CloseWrite) and closes the connection once the client has read to the
// end or closed. Safe for concurrent use; must not be copied.
type Echo struct {
	log   *slog.Logger
	conns acceptloop.Conns[net.Conn]
	pool  sync.Pool
}

// NewEcho returns an echo server that logs to log (slog.Default() when
// nil).
func NewEcho(log *slog.Logger) *Echo {
	if log == nil {
		log = slog.Default()
	}
	s := &Echo{log: log}
	s.pool.New = func() any { b := make([]byte, EchoBufferSize); return &b }
	return s
}

// Serve accepts connections on ln and echoes each until it ends. It
// returns ErrEchoClosed after Shutdown, else ln's error.
func (s *Echo) Serve(ln net.Listener) error {
	return s.conns.Serve(ln, func(nc net.Conn) net.Conn { return nc }, s.serveConn,
		acceptloop.Options{Logger: s.log, Name: "echo", Closed: ErrEchoClosed})
}

// Shutdown stops accepting and waits until every connection has ended or
// ctx ends; then it closes the connections still open and returns ctx's
// error.
func (s *Echo) Shutdown(ctx context.Context) error {
	s.conns.Close()
	select {
	case <-s.conns.Done():
		return nil
	case <-ctx.Done():
		for _, c := range s.conns.List() {
			_ = c.Close()
		}
		s.conns.Wait()
		return ctx.Err()
	}
}

// serveConn echoes nc until its client has closed its sending side (then
// it half-closes its own) or the connection fails.
func (s *Echo) serveConn(nc net.Conn) {
	defer nc.Close()
	read := s.reader(nc)
	for {
		buf, n, err := read()
		if n > 0 {
			_, werr := nc.Write((*buf)[:n])
			s.pool.Put(buf)
			if werr != nil {
				return
			}
		} else if buf != nil {
			s.pool.Put(buf)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if cw, ok := nc.(interface{ CloseWrite() error }); ok {
					_ = cw.CloseWrite()
					// Wait for the client to close: a Read returns once
					// it has (or the connection resets).
					var b [1]byte
					_, _ = nc.Read(b[:])
				}
			}
			return
		}
	}
}

// reader returns a function that waits for bytes on nc and returns them
// in a pooled buffer (nil when nothing was read), which the caller puts
// back. On a *net.TCPConn it waits for readability without a buffer
// (syscall.RawConn) and borrows one only to read what has arrived; on
// other connections it holds a buffer across the wait.
func (s *Echo) reader(nc net.Conn) func() (*[]byte, int, error) {
	sc, ok := nc.(syscall.Conn)
	var rc syscall.RawConn
	if ok {
		var err error
		if rc, err = sc.SyscallConn(); err != nil {
			ok = false
		}
	}
	if !ok {
		return func() (*[]byte, int, error) {
			buf := s.pool.Get().(*[]byte)
			n, err := nc.Read(*buf)
			return buf, n, err
		}
	}
	return func() (*[]byte, int, error) {
		var buf *[]byte
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			b := s.pool.Get().(*[]byte)
			for {
				n, rerr = syscall.Read(int(fd), *b)
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr == syscall.EAGAIN {
				s.pool.Put(b)
				return false // wait until readable, holding no buffer
			}
			buf = b
			return true
		})
		switch {
		case err != nil:
			return buf, 0, err
		case rerr != nil:
			return buf, 0, rerr
		case n == 0:
			return buf, 0, io.EOF
		}
		return buf, n, nil
	}
}
