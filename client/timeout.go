package client

import (
	"context"
	"errors"
	"io"
)

// cancelBody is an answer's body that ends its call's Options.Timeout
// context once the body is read to the end or closed, as net/http's
// Client does for its Timeout.
type cancelBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
}

// cancelRWBody is a cancelBody whose body can also be written to: the
// connection of a 101 Switching Protocols answer.
type cancelRWBody struct {
	cancelBody
	w io.Writer
}

// newCancelBody wraps rc (which may be nil) so that reading it to the end
// or closing it calls cancel.
func newCancelBody(rc io.ReadCloser, cancel context.CancelFunc) io.ReadCloser {
	if rc == nil {
		cancel()
		return nil
	}
	b := cancelBody{rc: rc, cancel: cancel}
	if w, ok := rc.(io.Writer); ok {
		return &cancelRWBody{cancelBody: b, w: w}
	}
	return &b
}

func (b *cancelBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if errors.Is(err, io.EOF) {
		b.cancel()
	}
	return n, err
}

func (b *cancelBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

func (b *cancelRWBody) Write(p []byte) (int, error) { return b.w.Write(p) }
