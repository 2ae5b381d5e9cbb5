//go:build linux

package lean

import (
	"crypto/tls"
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a connection of the lean path. Go's net.Conn
// calls read(2) and write(2) through the scheduler's system call hooks,
// which wake the runtime's monitor thread with a futex whenever the
// process was idle — once per proxied call on a front door waiting for its
// next request (docs/bench.md). rawIO makes the same non-blocking calls
// raw, inside the connection's own poller (syscall.RawConn), so deadlines,
// Close and parking on the netpoller work as with net.Conn. Not safe for
// concurrent use by more than one reader and one writer.
//
// Under TLS (nc a *tls.Conn) reads and writes go to nc: crypto/tls works
// on the bytes, and no raw call applies. Only peek looks at the socket
// beneath, for its end alone (see pollHup).
type rawIO struct {
	nc net.Conn
	rc syscall.RawConn // nil: nc is not a socket, calls go to nc
	// under is the socket beneath a *tls.Conn (nil otherwise), which
	// peek polls.
	under syscall.RawConn
	// pfd and zero are pollHup's arguments (made once: no allocation).
	pfd  pollFd
	zero syscall.Timespec

	// State of the call in progress, for the functions below (made once,
	// so that a call allocates nothing).
	rp, wp          []byte
	rn, wn          int
	rerr, werr      syscall.Errno
	eof             bool
	wait            bool
	seen            peekState
	readFn, writeFn func(uintptr) bool
	peekFn          func(uintptr)
}

func newRawIO(nc net.Conn) *rawIO {
	r := &rawIO{nc: nc}
	if tc, ok := nc.(*tls.Conn); ok {
		if sc, ok := tc.NetConn().(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				r.under, r.peekFn = rc, r.pollHup
			}
		}
		return r
	}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			r.rc = rc
			r.readFn, r.writeFn, r.peekFn = r.doRead, r.doWrite, r.doPeek
		}
	}
	return r
}

func (r *rawIO) Read(p []byte) (int, error) {
	if r.rc == nil {
		return r.nc.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	r.rp, r.rn, r.rerr, r.eof = p, 0, 0, false
	err := r.rc.Read(r.readFn)
	r.rp = nil
	switch {
	case err != nil:
		return 0, err
	case r.rerr != 0:
		return 0, r.rerr
	case r.eof:
		return 0, io.EOF
	}
	return r.rn, nil
}

func (r *rawIO) doRead(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.rp[0])), uintptr(len(r.rp)))
		switch e {
		case 0:
			if n == 0 {
				r.eof = true
			}
			r.rn = int(n)
			return true
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			r.rerr = e
			return true
		}
	}
}

func (r *rawIO) Write(p []byte) (int, error) {
	if r.rc == nil {
		return r.nc.Write(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	r.wp, r.wn, r.werr = p, 0, 0
	err := r.rc.Write(r.writeFn)
	n := r.wn
	r.wp = nil
	switch {
	case err != nil:
		return n, err
	case r.werr != 0:
		return n, r.werr
	}
	return n, nil
}

func (r *rawIO) doWrite(fd uintptr) bool {
	for r.wn < len(r.wp) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.wp[r.wn])), uintptr(len(r.wp)-r.wn))
		switch e {
		case 0:
			r.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			r.werr = e
			return true
		}
	}
	return true
}

// peek looks, without waiting or consuming, at what the connection holds;
// deadlines do not matter.
func (r *rawIO) peek() peekState {
	rc := r.rc
	if rc == nil {
		rc = r.under
	}
	if rc == nil {
		return peekEmpty
	}
	r.seen = peekClosed
	if err := rc.Control(r.peekFn); err != nil {
		return peekClosed
	}
	return r.seen
}

func (r *rawIO) doPeek(fd uintptr) {
	var b [1]byte
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			r.seen = peekEmpty
		case e == 0 && n > 0:
			r.seen = peekData
		default:
			r.seen = peekClosed
		}
		return
	}
}

// pollFd is struct pollfd of poll(2).
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// poll(2) events (linux/poll.h; the same on every Linux architecture Go
// supports).
const (
	pollIn    = 0x1
	pollErr   = 0x8
	pollHupEv = 0x10
	pollRdHup = 0x2000
)

// pollHup is peek under TLS: a client that leaves sends close_notify
// before its FIN, so that bytes waiting say nothing of its end; ppoll(2)'s
// POLLRDHUP does, whatever is buffered. It reports peekClosed when the
// peer shut its side down (or the socket failed), peekData when bytes wait
// (TLS records: maybe a pipelined request), peekEmpty otherwise.
func (r *rawIO) pollHup(fd uintptr) {
	r.pfd = pollFd{fd: int32(fd), events: pollIn | pollRdHup}
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&r.pfd)), 1,
			uintptr(unsafe.Pointer(&r.zero)), 0, 0, 0)
		switch {
		case e == syscall.EINTR:
			continue
		case e != 0:
			r.seen = peekClosed
		case r.pfd.revents&(pollRdHup|pollHupEv|pollErr) != 0:
			r.seen = peekClosed
		case r.pfd.revents&pollIn != 0:
			r.seen = peekData
		default:
			r.seen = peekEmpty
		}
		return
	}
}
