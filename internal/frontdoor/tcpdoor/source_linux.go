//go:build linux

package tcpdoor

import (
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSource is a direction's source descriptor, waited on and read
// through its syscall.RawConn, so that the read deadline holds and the
// wait parks in the runtime's poller. One direction uses it: not safe for
// concurrent use. Must not be copied after init.
type rawSource struct {
	rc    syscall.RawConn
	probe func(fd uintptr) bool // one closure for both waits: one allocation
	peek  bool                  // probe waits for bytes without reading them

	bp  *[]byte // read: the buffer being filled, from readBufs
	n   int     // read: bytes read; peek: bytes queued
	err error   // the socket's error, met by the probe
}

// init sets s up over c; false when c gives no raw descriptor.
func (s *rawSource) init(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	s.rc = rc
	s.probe = func(fd uintptr) bool {
		if s.peek {
			return s.peekFD(fd)
		}
		return s.readFD(fd)
	}
	return true
}

// read waits, honouring the read deadline, until the source has bytes,
// its end or an error, and reads the bytes with one read(2) into a buffer
// from readBufs: it returns the buffer and how many bytes it holds (0
// with a nil error: the source ended; the buffer is nil then and on every
// error). The caller puts the buffer back. While the source has nothing
// to read the buffer is back in the pool, so a waiting direction holds
// none.
func (s *rawSource) read() (*[]byte, int, error) {
	s.peek, s.n, s.err = false, 0, nil
	err := s.rc.Read(s.probe)
	b := s.bp
	s.bp = nil
	if err == nil {
		err = s.err
	}
	if err != nil || s.n == 0 {
		if b != nil {
			readBufs.Put(b)
		}
		return nil, 0, err
	}
	return b, s.n, nil
}

func (s *rawSource) readFD(fd uintptr) bool {
	if s.bp == nil {
		s.bp = readBufs.Get().(*[]byte)
	}
	for {
		r, err := unix.Read(int(fd), *s.bp)
		switch err {
		case nil:
			s.n = r
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			readBufs.Put(s.bp) // nothing yet: wait without the buffer
			s.bp = nil
			return false
		default:
			s.err = os.NewSyscallError("read", err)
			return true
		}
	}
}

// waitReady waits, without reading, until the source has bytes to read, its
// end, or an error, honouring the read deadline; it returns how many
// bytes are queued (0: the end or an error is next).
//
// The splice path waits with it before each splice so that an idle
// direction holds no pipe: net's splice takes a pipe (two descriptors and
// a kernel buffer) from its pool for the whole of a ReadFrom, waiting
// included, so splicing an idle connection would hold four more
// descriptors. Asking for exactly the queued bytes lets the splice return
// as soon as they are moved, and the pipe goes back to the pool.
func (s *rawSource) waitReady() (int, error) {
	s.peek, s.n, s.err = true, 0, nil
	if err := s.rc.Read(s.probe); err != nil {
		return 0, err
	}
	return s.n, s.err
}

func (s *rawSource) peekFD(fd uintptr) bool {
	n, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	if err != nil {
		return true // the copy meets the error
	}
	if n > 0 {
		s.n = n
		return true
	}
	// Nothing queued: the end, an error, or nothing yet.
	var b [1]byte
	r, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	switch {
	case e == unix.EAGAIN:
		return false
	case e != 0:
		s.err = e
	case r > 0: // a byte came since the ioctl
		n, _ := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		s.n = max(n, 1)
	}
	return true
}
