// Package acceptloop is the one accept loop of every listener in fulcrum:
// the front doors, the agents and the backends. It hands each accepted
// connection to a handler and, like net/http's Server.Serve, backs off on
// temporary accept errors (5 ms, doubling up to 1 s) instead of giving up:
// a process out of file descriptors (EMFILE, ENFILE) or a connection
// aborted before it was accepted (ECONNABORTED) leaves the listener
// serving again once the condition passes. It returns only when the
// listener is closed or fails for good.
//
// Usage:
//
//	err := acceptloop.Serve(ln, func(nc net.Conn) error {
//		go serveConn(nc)
//		return nil
//	}, acceptloop.Options{Logger: log, Name: "giop front door"})
//	if closing {
//		return ErrServerClosed
//	}
//	return err // the listener failed for good
//
// A server that tracks its connections for Shutdown uses Conns, which
// runs the same loop and keeps the listeners and connections:
//
//	return s.conns.Serve(ln, newConn, (*conn).serve,
//		acceptloop.Options{Logger: log, Name: "giop agent", Closed: ErrClosed})
//
// The back-off sleeps through Options.After, so tests drive it under
// testing/synctest or with a fake clock.
package acceptloop
