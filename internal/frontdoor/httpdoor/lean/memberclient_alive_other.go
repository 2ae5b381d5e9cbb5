//go:build !unix

package lean

import "net"

// peekConn cannot look at a connection here: a dead one shows when the
// call fails (a GET is then sent again on a fresh connection), a client
// that went away when its answer is written.
func peekConn(net.Conn) peekState { return peekEmpty }
