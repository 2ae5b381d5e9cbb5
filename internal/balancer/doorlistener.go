package balancer

import (
	"errors"
	"net"
	"sync"
)

// doorListener shares one listening socket between the front doors that
// serve it in turn: a front door serves a view of it, and a new front
// door (new timeouts, another protocol, a new access log) takes over the
// socket with a new view while the old one finishes its open connections
// on its own. No connection is refused in between: one accepted while no
// view waits is handed to the next view that does.
//
// One goroutine accepts on the socket and hands each connection (or
// accept error) to whichever view asks. Safe for concurrent use.
type doorListener struct {
	ln    net.Listener
	next  chan accepted
	quit  chan struct{}
	done  chan struct{} // closed when the accept goroutine has ended
	close sync.Once
}

// accepted is one result of the socket's Accept.
type accepted struct {
	conn net.Conn
	err  error
}

// newDoorListener starts accepting on ln. Close it to close ln.
func newDoorListener(ln net.Listener) *doorListener {
	d := &doorListener{ln: ln, next: make(chan accepted), quit: make(chan struct{}), done: make(chan struct{})}
	go d.acceptLoop()
	return d
}

func (d *doorListener) acceptLoop() {
	defer close(d.done)
	for {
		c, err := d.ln.Accept()
		select {
		case d.next <- accepted{c, err}:
		case <-d.quit:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// view returns a listener that takes connections from the socket until
// it is closed; closing it leaves the socket open.
func (d *doorListener) view() net.Listener {
	return &doorView{d: d, closed: make(chan struct{})}
}

// Close closes the socket and ends the accept goroutine; views then
// return net.ErrClosed.
func (d *doorListener) Close() error {
	var err error
	d.close.Do(func() {
		close(d.quit)
		err = d.ln.Close()
	})
	<-d.done
	return err
}

// Addr is the socket's address.
func (d *doorListener) Addr() net.Addr { return d.ln.Addr() }

// doorView is a front door's view of a doorListener.
type doorView struct {
	d      *doorListener
	closed chan struct{}
	once   sync.Once
}

func (v *doorView) Accept() (net.Conn, error) {
	select {
	case <-v.closed:
		return nil, net.ErrClosed
	default:
	}
	select {
	case a := <-v.d.next:
		return a.conn, a.err
	case <-v.closed:
		return nil, net.ErrClosed
	case <-v.d.quit:
		return nil, net.ErrClosed
	}
}

// Close stops this view; the socket stays open for the next one.
func (v *doorView) Close() error {
	v.once.Do(func() { close(v.closed) })
	return nil
}

func (v *doorView) Addr() net.Addr { return v.d.ln.Addr() }
