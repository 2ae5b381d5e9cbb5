//go:build !unix

package httpfd

import "net"

// alive cannot look at an idle connection here: a dead one shows when the
// call fails (a GET is then sent again on a fresh connection).
func alive(net.Conn) bool { return true }

// peerGone cannot look here: a client that went away shows when its
// answer is written.
func peerGone(net.Conn) bool { return false }
