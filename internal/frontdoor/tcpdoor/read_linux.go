//go:build linux

package tcpdoor

import (
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// readFunc returns a function that waits, honouring c's read deadline,
// until c has bytes, its end or an error, and reads the bytes with one
// read(2) into a buffer taken from readBufs: it returns the buffer and
// how many bytes it holds (0 with a nil error: c ended; the buffer is nil
// then and on every error). The caller puts the buffer back. While c has
// nothing to read the buffer is back in the pool, so a waiting direction
// holds none. nil when c gives no raw descriptor.
//
// Not safe for concurrent use: one direction calls it.
func readFunc(c net.Conn) func() (*[]byte, int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var (
		bp      *[]byte
		n       int
		readErr error
	)
	probe := func(fd uintptr) bool {
		if bp == nil {
			bp = readBufs.Get().(*[]byte)
		}
		for {
			r, err := unix.Read(int(fd), *bp)
			switch err {
			case nil:
				n = r
				return true
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				readBufs.Put(bp) // nothing yet: wait without the buffer
				bp = nil
				return false
			default:
				readErr = os.NewSyscallError("read", err)
				return true
			}
		}
	}
	return func() (*[]byte, int, error) {
		n, readErr = 0, nil
		err := rc.Read(probe)
		b := bp
		bp = nil
		if err == nil {
			err = readErr
		}
		if err != nil || n == 0 {
			if b != nil {
				readBufs.Put(b)
			}
			return nil, 0, err
		}
		return b, n, nil
	}
}
