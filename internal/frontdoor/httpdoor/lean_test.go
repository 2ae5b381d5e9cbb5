package httpdoor

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// rawConn dials the front door for hand-written requests.
func rawConn(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(waitBound))
	return conn, bufio.NewReader(conn)
}

func readAnswer(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	res, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading an answer: %v", err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatalf("reading an answer's body: %v", err)
	}
	return res, string(b)
}

func perRequestDoor(t *testing.T, opts Options, reps ...*replica) (*testGroup, *frontDoor) {
	t.Helper()
	var specs []spec
	for _, r := range reps {
		specs = append(specs, r.spec())
	}
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: specs})
	return g, startFrontDoor(t, g, opts)
}

// testLeanPipelining: requests sent back to back on one connection, one
// with a body, are answered in order; none goes to net/http.
func testLeanPipelining(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "/api", nil)
	g, fd := perRequestDoor(t, Options{Engine: engine}, r1)
	conn, br := rawConn(t, fd.addr)
	var reqs strings.Builder
	for i := range 3 {
		fmt.Fprintf(&reqs, "GET /p/%d?i=%d HTTP/1.1\r\nHost: fd\r\n\r\n", i, i)
	}
	reqs.WriteString("POST /p/post HTTP/1.1\r\nHost: fd\r\nContent-Length: 4\r\n\r\nbody")
	reqs.WriteString("HEAD /p/head HTTP/1.1\r\nHost: fd\r\n\r\n")
	reqs.WriteString("GET /p/last HTTP/1.1\r\nHost: fd\r\nConnection: close\r\n\r\n")
	if _, err := io.WriteString(conn, reqs.String()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, body := readAnswer(t, br, "GET")
		e := decodeEcho(t, []byte(body))
		if res.StatusCode != 200 || e.Path != fmt.Sprintf("/api/p/%d", i) || e.Query != fmt.Sprintf("i=%d", i) {
			t.Errorf("answer %d: %d %+v", i, res.StatusCode, e)
		}
	}
	res, body := readAnswer(t, br, "POST")
	if e := decodeEcho(t, []byte(body)); res.StatusCode != 200 || e.Method != "POST" || e.Body != "body" {
		t.Errorf("POST answer: %d %+v", res.StatusCode, e)
	}
	res, body = readAnswer(t, br, "HEAD")
	if res.StatusCode != 200 || body != "" {
		t.Errorf("HEAD answer: %d %q", res.StatusCode, body)
	}
	res, body = readAnswer(t, br, "GET")
	if e := decodeEcho(t, []byte(body)); res.StatusCode != 200 || e.Path != "/api/p/last" || !res.Close {
		t.Errorf("last answer: %d close=%v %+v", res.StatusCode, res.Close, e)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after Connection: close the front door kept the connection open (%v)", err)
	}
	checkHandedOver(t, fd, engine, 0)
	if n := g.counter("r1").Proxied.Load(); n != 6 {
		t.Errorf("proxied %d, want 6", n)
	}
	if n := r1.newConns.Load(); n != 1 {
		t.Errorf("%d connections to the replica, want 1 (kept alive)", n)
	}
	checkIdle(t, g)
}

// testLeanChunked: a chunked upload reaches the replica whole, and a
// chunked, streamed answer with trailers reaches the client whole.
func testLeanChunked(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Trailer", "X-Length")
		rc := http.NewResponseController(w)
		for _, part := range []string{"got ", string(b), " from ", fmt.Sprint(r.ContentLength, " ", r.TransferEncoding)} {
			_, _ = io.WriteString(w, part)
			_ = rc.Flush()
		}
		w.Header().Set("X-Length", fmt.Sprint(len(b)))
	})
	g, fd := perRequestDoor(t, Options{Engine: engine}, r1)
	conn, br := rawConn(t, fd.addr)
	for range 2 {
		_, _ = io.WriteString(conn, "POST /up HTTP/1.1\r\nHost: fd\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"5\r\nhello\r\n7;ext=x\r\n, world\r\n0\r\nX-Ignored: 1\r\n\r\n")
		res, body := readAnswer(t, br, "POST")
		if res.StatusCode != 200 || body != "got hello, world from -1 [chunked]" {
			t.Fatalf("answer %d %q", res.StatusCode, body)
		}
		if len(res.TransferEncoding) != 1 || res.Trailer.Get("X-Length") != "12" {
			t.Errorf("answer framing %v, trailers %v", res.TransferEncoding, res.Trailer)
		}
	}
	checkHandedOver(t, fd, engine, 0)
	checkIdle(t, g)
}

// closingReplica answers every request with a body ended by closing the
// connection (no length, not chunked).
func closingReplica(t *testing.T, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"+body)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// testLeanCloseDelimitedAnswer: an answer that ends with the replica's
// connection reaches the client chunked, on a connection that stays open.
func testLeanCloseDelimitedAnswer(t *testing.T, engine string) {
	t.Parallel()
	url := closingReplica(t, "until the end")
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{{id: "c", url: url}}})
	fd := startFrontDoor(t, g, Options{Engine: engine})
	conn, br := rawConn(t, fd.addr)
	for range 2 {
		_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: fd\r\n\r\n")
		res, body := readAnswer(t, br, "GET")
		if res.StatusCode != 200 || body != "until the end" || res.Close || len(res.TransferEncoding) != 1 {
			t.Fatalf("answer %d %q close=%v framing %v", res.StatusCode, body, res.Close, res.TransferEncoding)
		}
	}
	checkIdle(t, g)
}

// testLeanHandOver: what the lean path does not serve goes to net/http
// with the bytes already read, and is served as before.
func testLeanHandOver(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	ws := startReplica(t, "ws", "", wsEcho)

	t.Run("websocket", func(t *testing.T) {
		t.Parallel()
		g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{ws.spec()}})
		fd := startFrontDoor(t, g, Options{Engine: engine})
		conn, br := dialUpgrade(t, fd.addr, "/ws")
		_, _ = io.WriteString(conn, "ping\n")
		if got, err := br.ReadString('\n'); err != nil || got != "ping\n" {
			t.Fatalf("echo %q, %v", got, err)
		}
		checkHandedOver(t, fd, engine, 1)
	})
	t.Run("h2c prior knowledge", func(t *testing.T) {
		t.Parallel()
		_, fd := perRequestDoor(t, Options{Engine: engine}, r1)
		res, b := do(t, h2cClient(t), "POST", fd.url+"/h2", "over h2c")
		if e := decodeEcho(t, b); res.ProtoMajor != 2 || e.Body != "over h2c" {
			t.Fatalf("%s %+v", res.Proto, e)
		}
		checkHandedOver(t, fd, engine, 1)
	})
	t.Run("HTTP/1.0 after lean calls", func(t *testing.T) {
		t.Parallel()
		_, fd := perRequestDoor(t, Options{Engine: engine}, r1)
		conn, br := rawConn(t, fd.addr)
		_, _ = io.WriteString(conn, "GET /first HTTP/1.1\r\nHost: fd\r\n\r\nGET /old HTTP/1.0\r\n\r\n")
		if _, body := readAnswer(t, br, "GET"); decodeEcho(t, []byte(body)).Path != "/first" {
			t.Fatalf("first answer %q", body)
		}
		res, body := readAnswer(t, br, "GET")
		if e := decodeEcho(t, []byte(body)); res.StatusCode != 200 || e.Path != "/old" {
			t.Fatalf("HTTP/1.0 answer %d %+v", res.StatusCode, e)
		}
		checkHandedOver(t, fd, engine, 1)
	})
	t.Run("expect 100-continue", func(t *testing.T) {
		t.Parallel()
		_, fd := perRequestDoor(t, Options{Engine: engine}, r1)
		conn, br := rawConn(t, fd.addr)
		_, _ = io.WriteString(conn, "PUT /x HTTP/1.1\r\nHost: fd\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
		res, _ := readAnswer(t, br, "PUT")
		if res.StatusCode != http.StatusContinue {
			t.Fatalf("status %d, want 100 first", res.StatusCode)
		}
		_, _ = io.WriteString(conn, "data")
		// More 1xx answers may come before the final one (RFC 9110
		// §15.2): net/http's own 100 and, under stdlib, sometimes the
		// replica's, relayed.
		res, body := readAnswer(t, br, "PUT")
		for res.StatusCode == http.StatusContinue {
			res, body = readAnswer(t, br, "PUT")
		}
		if e := decodeEcho(t, []byte(body)); res.StatusCode != 200 || e.Body != "data" {
			t.Fatalf("answer %d %+v", res.StatusCode, e)
		}
	})
	t.Run("large head", func(t *testing.T) {
		t.Parallel()
		_, fd := perRequestDoor(t, Options{Engine: engine}, r1)
		res, b := do(t, h1Client(t), "GET", fd.url+"/big", "", "X-Big", strings.Repeat("b", 2*lean.ReadBuffer))
		if e := decodeEcho(t, b); res.StatusCode != 200 || e.Path != "/big" {
			t.Fatalf("%d %+v", res.StatusCode, e)
		}
		checkHandedOver(t, fd, engine, 1)
	})
	t.Run("redirect binding", func(t *testing.T) {
		t.Parallel()
		g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{r1.spec()}})
		fd := startFrontDoor(t, g, Options{Engine: engine})
		res, _ := do(t, noFollow(t), "GET", fd.url+"/r", "")
		if res.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("status %d, want 307", res.StatusCode)
		}
	})
}

// TestLeanBadRequest: malformed requests are answered 400 with the JSON
// error naming the problem, and the connection is closed. The lean
// engine's own parser does this; net/http (EngineStdlib) answers what it
// cannot parse in plain text, or not at all.
func TestLeanBadRequest(t *testing.T) {
	t.Parallel()
	const engine = EngineLean
	r1 := startReplica(t, "r1", "", nil)
	_, fd := perRequestDoor(t, Options{Engine: engine}, r1)
	for _, tc := range []struct{ raw, why string }{
		{"GET /a%zz HTTP/1.1\r\nHost: fd\r\n\r\n", "escape"},
		{"GET / HTTP/1.1\r\nHost: fd\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "Content-Length"},
		{"GET / HTTP/1.1\r\nHost: fd\r\nX-A: \x01\r\n\r\n", "header field"},
		{"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", "control character"},
		{"POST / HTTP/1.1\r\nHost: fd\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunked"},
	} {
		conn, br := rawConn(t, fd.addr)
		_, _ = io.WriteString(conn, tc.raw)
		res, body := readAnswer(t, br, "GET")
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: status %d, want 400", tc.raw, res.StatusCode)
			continue
		}
		e := decodeError(t, res, []byte(body))
		if e.Code != CodeBadRequest || !strings.Contains(e.Message, tc.why) || e.Group != "g" {
			t.Errorf("%q: error %+v, want bad_request about %q", tc.raw, e, tc.why)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%q: connection still open after a 400 (%v)", tc.raw, err)
		}
	}
	if n := r1.hits.Load(); n != 0 {
		t.Errorf("malformed requests reached the replica %d times", n)
	}
}

// testLeanClientGoneFreesInflight: a client that hangs up while its call
// runs frees the call's in-flight slot without waiting for the replica.
func testLeanClientGoneFreesInflight(t *testing.T, engine string) {
	t.Parallel()
	bl := newBlocker()
	defer close(bl.release)
	r1 := startReplica(t, "r1", "", bl.handler("r1"))
	g, fd := perRequestDoor(t, Options{Engine: engine}, r1)
	conn, _ := rawConn(t, fd.addr)
	_, _ = io.WriteString(conn, "GET /slow HTTP/1.1\r\nHost: fd\r\n\r\n")
	recv(t, bl.entered, "the call to reach the replica")
	if n := g.live("r1").Inflight.Load(); n != 1 {
		t.Fatalf("in flight %d during the call, want 1", n)
	}
	conn.Close()
	// Shutdown waits for the call to end; it ends (and frees its slot)
	// only when the front door sees its client gone, the replica still
	// holding it.
	fd.stop(t)
	if n := g.live("r1").Inflight.Load(); n != 0 {
		t.Fatalf("in flight %d after the client left, want 0", n)
	}
	if n := g.counter("r1").Proxied.Load(); n != 1 {
		t.Errorf("proxied %d, want 1", n)
	}
	if n := len(g.observed); n != 0 {
		t.Errorf("%d observations of an abandoned call, want 0", n)
	}
}

// testLeanHopByHop: hop-by-hop fields go neither way; forwarding fields
// are the front door's.
func testLeanHopByHop(t *testing.T, engine string) {
	t.Parallel()
	seen := make(chan http.Header, 1)
	r1 := startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Connection", "X-Member-Hop")
		w.Header().Set("X-Member-Hop", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-End", "kept")
		_, _ = io.WriteString(w, "ok")
	})
	_, fd := perRequestDoor(t, Options{Engine: engine}, r1)
	conn, br := rawConn(t, fd.addr)
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: public.example\r\nConnection: X-Secret\r\nX-Secret: 1\r\n"+
		"Keep-Alive: timeout=9\r\nProxy-Authorization: Basic eA==\r\nForwarded: for=evil\r\nX-Forwarded-Host: evil\r\n"+
		"X-Forwarded-Proto: https\r\nTE: trailers, gzip\r\nUser-Agent: lean-test\r\n\r\n")
	res, body := readAnswer(t, br, "GET")
	if res.StatusCode != 200 || body != "ok" {
		t.Fatalf("answer %d %q", res.StatusCode, body)
	}
	h := recv(t, seen, "the replica's request")
	for _, k := range []string{"Connection", "X-Secret", "Keep-Alive", "Proxy-Authorization", "Forwarded"} {
		if v, ok := h[k]; ok {
			t.Errorf("replica got %s: %q", k, v)
		}
	}
	if h.Get("X-Forwarded-Host") != "public.example" || h.Get("X-Forwarded-Proto") != "http" ||
		h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("Te") != "trailers" || h.Get("User-Agent") != "lean-test" {
		t.Errorf("replica got %v", h)
	}
	for _, k := range []string{"X-Member-Hop", "Keep-Alive"} {
		if v, ok := res.Header[k]; ok {
			t.Errorf("client got %s: %q", k, v)
		}
	}
	if res.Header.Get("X-End") != "kept" || res.Header.Get("Content-Length") != "2" {
		t.Errorf("client got %v", res.Header)
	}
}

// testLeanAccessLog: lean calls log as net/http's did.
func testLeanAccessLog(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	var log syncBuffer
	at := time.Date(2026, 1, 2, 15, 4, 5, 6e6, time.UTC)
	_, fd := perRequestDoor(t, Options{Engine: engine, AccessLog: &log, Now: func() time.Time { return at }}, r1)
	conn, br := rawConn(t, fd.addr)
	_, _ = io.WriteString(conn, "GET /a?b=%22c%22 HTTP/1.1\r\nHost: fd\r\n\r\n")
	_, body := readAnswer(t, br, "GET")
	fd.stop(t)
	want := fmt.Sprintf(`method=GET path="/a?b=%%22c%%22" proto=HTTP/1.1 status=200 replica=r1 duration_ms=0.000 bytes=%d`, len(body))
	if line := log.String(); !strings.HasPrefix(line, "time=2026-01-02T15:04:05.006Z client=127.0.0.1:") || !strings.Contains(line, want) {
		t.Errorf("access log:\n%s\nwant ... %s", line, want)
	}
}

// testLeanEventStream: an event stream is not bounded by the request
// timeout, and each event reaches the client as it is written. A call to
// /slow, started after the stream and answered 504 once the request
// timeout passed, witnesses that the stream outlived the timeout.
func testLeanEventStream(t *testing.T, engine string) {
	t.Parallel()
	next := make(chan string)
	r1 := startReplica(t, "r1", "", withSlow(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		_ = rc.Flush() // the headers, at once
		for {
			select {
			case ev, ok := <-next:
				if !ok {
					return
				}
				_, _ = io.WriteString(w, "data: "+ev+"\n\n")
				_ = rc.Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	// Long enough for net/http (EngineStdlib) to read the witness's head on
	// a busy machine: its ReadHeaderTimeout is the request timeout too.
	const requestTimeout = 200 * time.Millisecond
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()},
		timeouts: protocol.Timeouts{Request: registryDuration(requestTimeout)}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
	conn, br := rawConn(t, fd.addr)
	_, _ = io.WriteString(conn, "GET /events HTTP/1.1\r\nHost: fd\r\n\r\n")
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := bufio.NewReader(res.Body)
	ctx := boundedCtx(t)
	event := func(i int) {
		t.Helper()
		ev := fmt.Sprint("event ", i)
		select {
		case next <- ev:
		case <-ctx.Done():
			t.Fatal("the replica's handler is gone")
		}
		line, err := events.ReadString('\n')
		if err != nil || line != "data: "+ev+"\n" {
			t.Fatalf("event %d: %q, %v", i, line, err)
		}
		if blank, _ := events.ReadString('\n'); blank != "\n" {
			t.Fatalf("event %d not terminated: %q", i, blank)
		}
	}
	event(0)
	witnessTimeout(t, fd)
	event(1)
	event(2)
	close(next)
	if rest, err := io.ReadAll(events); err != nil || len(rest) != 0 {
		t.Fatalf("end of stream: %q, %v", rest, err)
	}
	checkHandedOver(t, fd, engine, 0)
	checkIdle(t, g)
}

// testLeanEarlyAnswer: a replica that answers before it has read a large
// body (413 here) and closes gets its answer to the client, not a 502;
// the client's connection then ends.
func testLeanEarlyAnswer(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})
	g, fd := perRequestDoor(t, Options{Engine: engine}, r1)
	conn, br := rawConn(t, fd.addr)
	const size = 32 << 20
	sent := make(chan error, 1)
	go func() {
		_, err := fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: fd\r\nContent-Length: %d\r\n\r\n", size)
		if err == nil {
			_, err = io.Copy(conn, io.LimitReader(zeros{}, size))
		}
		sent <- err
	}()
	res, body := readAnswer(t, br, "POST")
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "too large") || !res.Close {
		t.Fatalf("answer %d %q close=%v, want the replica's 413 and the connection closing", res.StatusCode, body, res.Close)
	}
	// The front door drains what the client still sends for a moment
	// (so that the reset of an unread body cannot discard the answer),
	// then ends the connection.
	<-sent
	if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("after the early answer: read %d bytes, %v; want the connection ended", n, err)
	}
	checkIdle(t, g)
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
