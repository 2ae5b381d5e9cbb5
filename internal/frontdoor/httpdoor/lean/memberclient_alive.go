//go:build unix && !linux

package lean

import (
	"net"
	"syscall"
)

// peekConn looks at what nc holds with one non-blocking peek.
func peekConn(nc net.Conn) peekState {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return peekEmpty
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return peekClosed
	}
	st := peekClosed
	var buf [1]byte
	err = raw.Control(func(fd uintptr) {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK:
			st = peekEmpty
		case rerr == nil && n > 0:
			st = peekData
		}
	})
	if err != nil {
		return peekClosed
	}
	return st
}
