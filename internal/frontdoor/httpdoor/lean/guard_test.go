package lean

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// memConn is a client connection in memory for net/http: reads give the
// stream, at most chunk bytes at a time, then EOF; answers are discarded.
type memConn struct {
	r     *bytes.Reader
	chunk int
}

func (c *memConn) Read(p []byte) (int, error) {
	if c.chunk > 0 && len(p) > c.chunk {
		p = p[:c.chunk]
	}
	return c.r.Read(p)
}
func (c *memConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "192.0.2.1:1" }

// oneConn is a listener that accepts one connection.
type oneConn struct {
	c    chan net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConn) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *oneConn) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *oneConn) Addr() net.Addr { return memAddr{} }

// served is one request net/http handed to the handler, with the framing
// the guard gave for it.
type served struct {
	method, uri, proto string
	body               int64
	bodyErr            error
	f                  Framing
	known              bool
}

// traced is one request as the guard read it: its head, then (once it
// read the whole body) its body's length.
type traced struct {
	head []byte
	body int64 // -1 until the body was read whole
}

// serveGuarded serves stream, read chunk bytes at a time, with net/http
// (configured as the front door's) through a Guard; it returns the
// requests net/http handed to the handler, and the guard's trace.
func serveGuarded(t *testing.T, stream []byte, chunk int) ([]served, []traced, *Guard) {
	t.Helper()
	g := NewGuard(&memConn{r: bytes.NewReader(stream), chunk: chunk})
	var trace []traced
	g.f.trace = func(head []byte, body int64) {
		if head != nil {
			trace = append(trace, traced{head: head, body: -1})
		} else {
			trace[len(trace)-1].body = body
		}
	}
	var mu sync.Mutex
	var got []served
	closed := make(chan struct{})
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols: protos,
		// As the front door's: net/http would answer OPTIONS * itself.
		DisableGeneralOptionsHandler: true,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 1 {
				return
			}
			s := served{method: r.Method, uri: r.RequestURI, proto: r.Proto}
			s.f, s.known = g.Next()
			s.body, s.bodyErr = io.Copy(io.Discard, r.Body)
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
		}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				close(closed)
			}
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	ln := &oneConn{c: make(chan net.Conn, 1), done: make(chan struct{})}
	ln.c <- g
	serveDone := make(chan struct{})
	go func() { defer close(serveDone); _ = srv.Serve(ln) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("net/http did not finish serving %q:\n%s", stream, buf[:runtime.Stack(buf, true)])
	}
	_ = srv.Close()
	<-serveDone
	mu.Lock()
	defer mu.Unlock()
	return got, trace, g
}

// checkGuard serves stream through a guard and checks it against
// net/http: for every request net/http served, the guard either gave the
// framing of that very head (same request line; the facts its raw fields
// call for; the body length net/http read) or, having lost track of the
// stream or passed it through, none — never facts of another head.
func checkGuard(t *testing.T, stream []byte, chunk int) {
	t.Helper()
	got, trace, g := serveGuarded(t, stream, chunk)
	for k, s := range got {
		if !s.known {
			if g.f.st < stPassthrough {
				t.Fatalf("%q (reads of %d): request %d (%s %s) has no framing, yet the guard follows the stream", stream, chunk, k, s.method, s.uri)
			}
			continue
		}
		if k >= len(trace) {
			t.Fatalf("%q: request %d has a framing, the guard read %d heads", stream, k, len(trace))
		}
		head := trace[k].head
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("%q: the guard's head %d %q does not parse: %v", stream, k, head, err)
		}
		if req.Method != s.method || req.RequestURI != s.uri || req.Proto != s.proto {
			t.Fatalf("%q (reads of %d): request %d is %s %s %s to net/http, the guard read head %q", stream, chunk, k, s.method, s.uri, s.proto, head)
		}
		cl, te := rawFieldPresent(head, "Content-Length"), rawFieldPresent(head, "Transfer-Encoding")
		want := Framing{
			Conflict:    req.ProtoMajor == 1 && req.ProtoMinor >= 1 && cl && te,
			TE10:        req.ProtoMajor == 1 && req.ProtoMinor == 0 && te,
			Passthrough: req.ProtoMajor != 1 || req.Method == http.MethodConnect || rawFieldPresent(head, "Upgrade"),
		}
		if s.f != want {
			t.Fatalf("%q: head %q: framing %+v, want %+v", stream, head, s.f, want)
		}
		if s.bodyErr == nil && trace[k].body >= 0 && trace[k].body != s.body {
			t.Fatalf("%q (reads of %d): head %q: the guard read a body of %d bytes, net/http %d", stream, chunk, head, trace[k].body, s.body)
		}
	}
}

// guardSeeds are request streams that exercise the framing rules.
var guardSeeds = []string{
	"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /clte HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\nPOST /te10 HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx\r\n\n\rGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /g HTTP/1.1\r\nHost: x\r\n\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"PUT /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nokGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3 ;x\r\nabc\r\n0\r\n\r\n",
	"POST /f HTTP/1.1\nHost: x\nContent-Length: 2\n\nokGET /n HTTP/1.1\r\nHost: x\r\nX: 1\r\n 2\r\n\r\n",
	"GET /a%2Fb?q=1;2 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nokGET http://x/abs HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /gz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"POST /tr HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\nPOST /clte HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
}

// FuzzGuard is the guard's differential test against net/http: any
// stream, read in pieces of any size (chunk; 0: as much as asked).
func FuzzGuard(f *testing.F) {
	for i, s := range guardSeeds {
		f.Add([]byte(s), byte(i%7))
	}
	f.Fuzz(func(t *testing.T, stream []byte, chunk byte) {
		checkGuard(t, stream, int(chunk))
	})
}

// TestGuardRandomStreams holds the guard to net/http on random pipelined
// streams: the requests of guardSeeds, and pieces of requests, in random
// order, some bytes changed, read in random pieces.
func TestGuardRandomStreams(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 9112))
	n := 1000
	if testing.Short() {
		n = 100
	}
	for range n {
		stream := randomStream(rng)
		checkGuard(t, stream, rng.IntN(40))
	}
}

// randomStream strings together requests of random framing.
func randomStream(rng *rand.Rand) []byte {
	var b bytes.Buffer
	for range 1 + rng.IntN(6) {
		b.WriteString(randomRequest(rng))
	}
	out := b.Bytes()
	if rng.IntN(3) == 0 {
		// Malformed bits: a byte changed to one that matters to framing.
		if len(out) > 0 {
			out[rng.IntN(len(out))] = "\r\n0a;: \t"[rng.IntN(8)]
		}
	}
	return out
}

func randomRequest(rng *rand.Rand) string {
	var b strings.Builder
	methods := []string{"GET", "POST", "PUT", "HEAD"}
	method := methods[rng.IntN(len(methods))]
	proto := "HTTP/1.1"
	if rng.IntN(4) == 0 {
		proto = "HTTP/1.0"
	}
	target := fmt.Sprintf("/r%d", rng.IntN(100))
	switch rng.IntN(20) {
	case 0:
		method, target = "OPTIONS", "*"
	case 1:
		target = "http://x/abs"
	}
	fmt.Fprintf(&b, "%s %s %s\r\nHost: x\r\n", method, target, proto)
	if proto == "HTTP/1.0" {
		b.WriteString("Connection: keep-alive\r\n")
	}
	switch rng.IntN(30) {
	case 0:
		b.WriteString("Connection: Upgrade\r\nUpgrade: websocket\r\n")
	case 1:
		b.WriteString("X-Folded: a\r\n b\r\n")
	case 2:
		b.WriteString("transfer-encoding: chunked\r\n")
	}
	body := strings.Repeat("b", rng.IntN(12))
	cl, chunked := rng.IntN(2) == 0, rng.IntN(3) == 0
	if rng.IntN(10) == 0 {
		b.WriteString("Expect: 100-continue\r\n")
	}
	if cl {
		n := len(body)
		if chunked && rng.IntN(2) == 0 {
			n = rng.IntN(20)
		}
		fmt.Fprintf(&b, "Content-Length: %d\r\n", n)
		if rng.IntN(8) == 0 {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", n)
		}
	}
	if chunked {
		te := []string{"chunked", "Chunked", "chunked", "chunked", "chunked", "gzip"}[rng.IntN(6)]
		fmt.Fprintf(&b, "Transfer-Encoding: %s\r\n", te)
	}
	b.WriteString("\r\n")
	switch {
	case chunked && (proto == "HTTP/1.1" || rng.IntN(2) == 0):
		for len(body) > 0 {
			n := 1 + rng.IntN(len(body))
			ext := []string{"", ";a=b", " ", "\t;x"}[rng.IntN(4)]
			fmt.Fprintf(&b, "%x%s\r\n%s\r\n", n, ext, body[:n])
			body = body[n:]
		}
		b.WriteString("0\r\n")
		if rng.IntN(4) == 0 {
			b.WriteString("X-Trailer: t\r\n")
		}
		b.WriteString("\r\n")
	case cl:
		b.WriteString(body)
	}
	if method == "POST" && rng.IntN(3) == 0 {
		b.WriteString("\r\n\r\n\n"[:1+rng.IntN(5)])
	}
	return b.String()
}

// TestGuardFraming: the facts the guard gives for a stream read in every
// split, and where it stops following.
func TestGuardFraming(t *testing.T) {
	t.Parallel()
	const get = "GET /n HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tc := range []struct {
		name   string
		stream string
		want   []Framing
		st     stage
	}{
		{"plain", get + get, []Framing{{}, {}}, stHead},
		{"length with chunked", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + get,
			[]Framing{{Conflict: true}, {}}, stHead},
		{"HTTP/1.0 chunked", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc" + get,
			[]Framing{{TE10: true}, {}}, stHead},
		{"HTTP/1.0 chunked without length", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + get,
			[]Framing{{TE10: true}, {}}, stHead},
		{"CR/LF after a POST", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx\n\r\r\n" + get, []Framing{{}, {}}, stHead},
		{"trailers", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nA: b\r\nC: d\r\n\r\n" + get,
			[]Framing{{}, {}}, stHead},
		{"upgrade", "GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n" + get,
			[]Framing{{Passthrough: true}}, stPassthrough},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", []Framing{{Passthrough: true}}, stPassthrough},
		{"bare LF in a chunk line", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\nx\r\n0\r\n\r\n" + get,
			[]Framing{{}}, stLost},
		{"bare LF in trailers", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\n\r\n" + get,
			[]Framing{{}}, stLost},
		{"head net/http refuses", "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" + get, nil, stLost},
		{"empty line before a head", "\r\n" + get, nil, stLost},
		{"huge chunk", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", []Framing{{}}, stLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for split := 1; split <= len(tc.stream); split++ {
				var got []Framing
				f := framer{push: func(fr Framing) { got = append(got, fr) }}
				in := []byte(tc.stream)
				for len(in) > 0 {
					n := min(split, len(in))
					f.feed(in[:n])
					in = in[n:]
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) || f.st != tc.st {
					t.Fatalf("in pieces of %d: framings %+v, stage %d; want %+v, stage %d", split, got, f.st, tc.want, tc.st)
				}
			}
		})
	}
}

// TestGuardAllocations: following a stream of plain requests allocates
// nothing (the head's buffer aside, kept from request to request).
func TestGuardAllocations(t *testing.T) {
	stream := []byte("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" +
		"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	f := framer{push: func(Framing) {}}
	f.feed(stream)
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < len(stream); i += 7 {
			f.feed(stream[i:min(i+7, len(stream))])
		}
	})
	if allocs != 0 || f.st != stHead {
		t.Errorf("%.1f allocations a stream, stage %d", allocs, f.st)
	}
}

// BenchmarkGuard measures following one request as net/http reads it:
// the head bench overhead's client sends, read in one piece.
func BenchmarkGuard(b *testing.B) {
	req := []byte("GET /prime/1009 HTTP/1.1\r\nHost: fd\r\nUser-Agent: bench\r\n\r\n")
	f := framer{push: func(Framing) {}}
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		f.feed(req)
	}
	if f.st != stHead {
		b.Fatalf("stage %d", f.st)
	}
}
