//go:build unix

package httpfd

import (
	"net"
	"syscall"
)

// alive reports whether an idle connection is still usable: nothing
// arrived on it while idle, neither data (an answer to nothing) nor the
// member closing it. One non-blocking peek, no waiting.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	live := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing to read, the connection is idle and open.
		live = n <= 0 && (rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK)
		return true // never wait for readability
	})
	return err == nil && live
}

// peerGone reports whether the peer closed or reset nc: a non-blocking
// peek sees the end of the stream or an error. Data waiting to be read
// (a pipelined request) or nothing at all mean the peer is still there.
// nc must have no read deadline in the past.
func peerGone(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK || rerr == syscall.EINTR:
		case rerr != nil, n == 0:
			gone = true
		}
		return true
	})
	return err != nil || gone
}
