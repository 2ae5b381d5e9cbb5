package lean

import (
	"bufio"
	"net"
	"sync"
)

// Guard is a client connection served by net/http — one the engine handed
// over, or any under the stdlib engine. It follows the request stream as
// net/http reads it (framer.go) and records, for each request head, the
// framing facts RFC 9112 judges and net/http does not: the front door's
// handler takes them with Next, one per request, in order. net/http never
// reads a connection from two goroutines at once (its background read
// included); Next may be called concurrently with Read. The server must
// have http.Server.DisableGeneralOptionsHandler set: otherwise net/http
// answers OPTIONS * itself, and the handler would take that request's
// framing for the next one.
//
// Reads first return what the engine had buffered (the bytes it read of
// a connection it handed over), then read from the connection.
type Guard struct {
	net.Conn
	br *bufio.Reader // nil once drained
	f  framer        // Read's alone

	mu sync.Mutex
	// q[qh:] are the framings of the heads read and not yet taken.
	q  []Framing
	qh int
}

// NewGuard returns c guarded: to be served by net/http.
func NewGuard(c net.Conn) *Guard { return newGuard(c, nil) }

// newGuard returns c guarded; its reads first return what br buffers.
func newGuard(c net.Conn, br *bufio.Reader) *Guard {
	g := &Guard{Conn: c, br: br}
	g.f.push = g.record
	return g
}

// Next takes the framing of the connection's next request (the k-th call
// takes the k-th head net/http read: net/http calls the handler for each
// head it reads, or answers itself and closes the connection). ok is false
// when the guard does not know it — it lost track of the stream, or the
// stream was passed through after an Upgrade or CONNECT request: the
// request's answer must close the connection. Safe for concurrent use.
func (g *Guard) Next() (f Framing, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.qh == len(g.q) {
		return Framing{}, false
	}
	f = g.q[g.qh]
	if g.qh++; g.qh == len(g.q) {
		g.q, g.qh = g.q[:0], 0
	}
	return f, true
}

// record queues the framing of the head just read.
func (g *Guard) record(f Framing) {
	g.mu.Lock()
	g.q = append(g.q, f)
	g.mu.Unlock()
}

// Read implements net.Conn: what the connection gives is followed before
// net/http sees it.
func (g *Guard) Read(p []byte) (n int, err error) {
	if g.br != nil && g.br.Buffered() > 0 {
		n, err = g.br.Read(p)
	} else {
		g.br = nil
		n, err = g.Conn.Read(p)
	}
	if n > 0 && g.f.st < stPassthrough {
		g.f.feed(p[:n])
	}
	return n, err
}

// CloseWrite half-closes the connection when it can (net/http uses it to
// deliver an error answer before closing).
func (g *Guard) CloseWrite() error {
	if cw, ok := g.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
