package giopconn

import (
	"context"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
)

// Closer is a front door's client connection as Drain and AbortAll see
// it: a *Conn, or a type embedding one (which may add to Abort).
type Closer interface {
	CloseIfIdle() bool
	Abort()
}

// Drain stops accepting connections on conns and closes each connection
// as soon as it has nothing in flight, with a CloseConnection first (the
// client ORB may reissue what was not answered: nothing unanswered was
// read after it). It returns when every connection's serve has returned,
// or, when ctx ends first, aborts what is left, waits for it and returns
// ctx's error. For a connection to close when its last work leaves, its
// Options.Closing must be conns.Closing.
func Drain[C interface {
	comparable
	Closer
}](ctx context.Context, conns *acceptloop.Conns[C]) error {
	conns.Close()
	for _, c := range conns.List() {
		c.CloseIfIdle()
	}
	wait := conns.Done()
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		AbortAll(conns)
		<-wait
		return ctx.Err()
	}
}

// AbortAll aborts every connection of conns.
func AbortAll[C interface {
	comparable
	Closer
}](conns *acceptloop.Conns[C]) {
	for _, c := range conns.List() {
		c.Abort()
	}
}
