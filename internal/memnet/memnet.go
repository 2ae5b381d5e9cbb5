// Package memnet is an in-memory network for tests of fulcrum's concurrent
// layers under testing/synctest, which does not count socket I/O as
// blocked: listeners and a dialer whose connections are net.Pipe pairs,
// addressed like TCP ("127.0.0.1:port"). Give a Network's Listen and Dial
// to the code under test (balancer.Options.Listen and Dial) and to the
// test's own servers and clients.
//
//	n := memnet.New()
//	ln, _ := n.Listen("tcp", "127.0.0.1:0")
//	go http.Serve(ln, handler)
//	c := &http.Client{Transport: &http.Transport{DialContext: n.Dial}}
//	c.Get("http://" + ln.Addr().String() + "/")
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
)

// ErrClosed is returned by Accept on a closed listener.
var ErrClosed = net.ErrClosed

// Network is a set of in-memory listeners. Safe for concurrent use.
type Network struct {
	mu        sync.Mutex
	listeners map[netip.AddrPort]*Listener
	nextPort  uint16
}

// New returns an empty network; ports given for port 0 start at 40000.
func New() *Network {
	return &Network{listeners: map[netip.AddrPort]*Listener{}, nextPort: 40000}
}

// Listen listens on addr ("host:port", host an IP address or localhost;
// port 0 picks a free one). network must be tcp, tcp4 or tcp6. An address
// in use is an error wrapping syscall.EADDRINUSE.
func (n *Network) Listen(network, addr string) (net.Listener, error) {
	ap, err := parse(network, addr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if ap.Port() == 0 {
		for n.listeners[netip.AddrPortFrom(ap.Addr(), n.nextPort)] != nil {
			n.nextPort++
		}
		ap = netip.AddrPortFrom(ap.Addr(), n.nextPort)
		n.nextPort++
	}
	if n.listeners[ap] != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: net.TCPAddrFromAddrPort(ap), Err: syscall.EADDRINUSE}
	}
	ln := &Listener{n: n, addr: ap, conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[ap] = ln
	return ln, nil
}

// Dial connects to the listener on addr; with none there it fails with an
// error wrapping syscall.ECONNREFUSED. It blocks until the listener
// accepts, ctx ends or the listener closes.
func (n *Network) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := parse(network, addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	n.mu.Lock()
	ln := n.listeners[ap]
	n.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: network, Addr: net.TCPAddrFromAddrPort(ap), Err: syscall.ECONNREFUSED}
	if ln == nil {
		return nil, refused
	}
	client, server := net.Pipe()
	select {
	case ln.conns <- &conn{Conn: server, local: ln.Addr(), remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}:
		return &conn{Conn: client, local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, remote: ln.Addr()}, nil
	case <-ln.done:
		return nil, refused
	case <-ctx.Done():
		return nil, &net.OpError{Op: "dial", Net: network, Addr: ln.Addr(), Err: ctx.Err()}
	}
}

func parse(network, addr string) (netip.AddrPort, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return netip.AddrPort{}, fmt.Errorf("memnet: network %q, want tcp", network)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if host == "localhost" || host == "" {
		host = "127.0.0.1"
	}
	return netip.ParseAddrPort(net.JoinHostPort(host, port))
}

// Listener is an in-memory listener.
type Listener struct {
	n     *Network
	addr  netip.AddrPort
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// Accept waits for the next connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: ErrClosed}
	}
}

// Close stops listening and frees the address; connections accepted stay
// open.
func (l *Listener) Close() error {
	err := errors.New("memnet: listener already closed")
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		delete(l.n.listeners, l.addr)
		l.n.mu.Unlock()
		err = nil
	})
	return err
}

// Addr is the listener's address, a *net.TCPAddr.
func (l *Listener) Addr() net.Addr { return net.TCPAddrFromAddrPort(l.addr) }

// conn is one end of a pipe with TCP-like addresses.
type conn struct {
	net.Conn
	local, remote net.Addr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }
