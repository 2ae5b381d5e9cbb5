package lean

import "net"

// What a non-blocking peek at a connection saw.
type peekState uint8

const (
	peekEmpty  peekState = iota // open, nothing to read
	peekData                    // bytes waiting
	peekClosed                  // the peer closed or reset it (or it is closed)
)

// alive reports whether an idle connection is still usable: nothing
// arrived on it while idle, neither data (an answer to nothing) nor the
// member closing it. One non-blocking peek, no waiting, whatever nc's
// deadlines.
func alive(nc net.Conn) bool { return newRawIO(nc).peek() == peekEmpty }
