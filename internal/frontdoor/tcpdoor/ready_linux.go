//go:build linux

package tcpdoor

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readyFunc returns a function that waits, without reading, until c has
// bytes to read, its end, or an error, honouring c's read deadline; it
// returns how many bytes are queued (0: the end or an error is next). nil
// when c gives no raw descriptor.
//
// The copy waits with it before each splice so that an idle direction
// holds no pipe: net's splice takes a pipe (two descriptors and a kernel
// buffer) from its pool for the whole of a ReadFrom, waiting included, so
// splicing an idle connection would hold four more descriptors. Asking
// for exactly the queued bytes lets the splice return as soon as they are
// moved, and the pipe goes back to the pool.
func readyFunc(c net.Conn) func() (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var avail int
	var sockErr error
	probe := func(fd uintptr) bool {
		n, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		if err != nil {
			return true // the copy meets the error
		}
		if n > 0 {
			avail = n
			return true
		}
		// Nothing queued: the end, an error, or nothing yet.
		var b [1]byte
		r, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == unix.EAGAIN:
			return false
		case e != 0:
			sockErr = e
		case r > 0: // a byte came since the ioctl
			n, _ := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
			avail = max(n, 1)
		}
		return true
	}
	return func() (int, error) {
		avail, sockErr = 0, nil
		if err := rc.Read(probe); err != nil {
			return 0, err
		}
		return avail, sockErr
	}
}
