// Package giopconn is what the GIOP front doors (packages giopdoor and
// giopbridge) share about a client connection's life: counting the work in
// flight on it, closing it with a CloseConnection once it is idle (when the
// client has been silent for the idle timeout, or the server shuts down),
// answering a protocol error with a MessageError before closing, writing
// messages one at a time, and draining a server's connections.
//
// A front door embeds a *Conn in its own connection type and reads the
// connection itself (package wire):
//
//	c := &clientConn{Conn: giopconn.New(nc, giopconn.Options{Closing: s.conns.Closing, Logger: log})}
//	// read loop: c.Saw(h) for each header read; wire.ErrIdle → c.CloseIfIdle();
//	// a request: if !c.Enter() { return }; …; c.Leave() when answered.
//	// shutdown: giopconn.Drain(ctx, &s.conns)
package giopconn
