package acceptloop

import (
	"errors"
	"log/slog"
	"net"
	"syscall"
	"time"
)

// Back-off bounds after a temporary accept error, as net/http's.
const (
	MinBackoff = 5 * time.Millisecond
	MaxBackoff = time.Second
)

// Options configure Serve. The zero value is usable.
type Options struct {
	// Logger receives one warning per episode of temporary accept errors;
	// slog.Default() when nil.
	Logger *slog.Logger
	// Name says which listener it is in log lines ("giop front door").
	Name string
	// After is the back-off's timer; time.After when nil.
	After func(time.Duration) <-chan time.Time
	// Closed is what Conns.Serve returns once Conns.Close was called (the
	// server's own "server closed" error); ErrClosing when nil.
	Closed error
}

// Serve accepts connections on ln and calls handle with each, on the
// calling goroutine (handle starts whatever serves the connection and
// returns at once). A temporary accept error (see Temporary) is retried
// after a back-off that starts at MinBackoff and doubles up to MaxBackoff,
// reset by the next accepted connection; the first error of each such
// episode is logged once. Serve returns ln's error when ln is closed
// (errors.Is(err, net.ErrClosed)) or fails permanently, and handle's error
// when handle returns one (which stops the loop; the handler owns nc
// then). The caller closes ln.
func Serve(ln net.Listener, handle func(nc net.Conn) error, opts Options) error {
	after := opts.After
	if after == nil {
		after = time.After
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !Temporary(err) {
				return err
			}
			if backoff == 0 {
				log.Warn("accept failed, retrying with back-off", "listener", opts.Name, "addr", addrOf(ln), "err", err)
			}
			backoff = NextBackoff(backoff)
			<-after(backoff)
			continue
		}
		if backoff > 0 {
			log.Debug("accepting again", "listener", opts.Name, "addr", addrOf(ln))
			backoff = 0
		}
		if err := handle(nc); err != nil {
			return err
		}
	}
}

// NextBackoff is the back-off after one of prev: MinBackoff first, then
// doubling, never above MaxBackoff.
func NextBackoff(prev time.Duration) time.Duration {
	return min(max(2*prev, MinBackoff), MaxBackoff)
}

// Temporary reports whether an accept error may pass by itself, so that
// accepting again later can succeed: a timeout, running out of file
// descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), a connection
// that ended before it was accepted (ECONNABORTED, ECONNRESET, EPROTO), an
// interrupted call (EINTR, EAGAIN), or an error that says of itself that
// it is temporary. A closed listener (net.ErrClosed) is not.
func Temporary(err error) bool {
	if err == nil || errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, e := range temporaryErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

var temporaryErrnos = []error{
	syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
	syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EPROTO,
	syscall.EINTR, syscall.EAGAIN,
}

func addrOf(ln net.Listener) string {
	if a := ln.Addr(); a != nil {
		return a.String()
	}
	return ""
}
