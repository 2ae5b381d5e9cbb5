//go:build linux

package lean

import (
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
type rawIO struct {
	nc net.Conn
	rc syscall.RawConn // nil: nc is not a socket, calls go to nc

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
	if r.rc == nil {
		return peekEmpty
	}
	r.seen = peekClosed
	if err := r.rc.Control(r.peekFn); err != nil {
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
