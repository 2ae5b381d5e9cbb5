package httpdoor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// rawExchange writes raw bytes to the front door and reads one response.
func rawExchange(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(waitBound))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", raw[:min(len(raw), 40)], err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func testBadInput(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	for _, binding := range []string{protocol.OnDemand, protocol.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			g := newTestGroup(groupConfig{binding: binding, members: []spec{r1.spec()}})
			fd := startFrontDoor(t, g, Options{Engine: engine})
			huge := strings.Repeat("a", MaxHeaderBytes+8<<10)
			for _, tc := range []struct {
				name   string
				raw    string
				status int
				code   string // our JSON error code, when we answer
			}{
				// (At least 14 bytes: net/http sniffs for the h2c preface first.)
				{"garbage request line", "GARBAGE GARBAGE GARBAGE\r\n\r\n", http.StatusBadRequest, ""},
				{"bad HTTP version", "GET / HTTP/9.9\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported, ""},
				{"missing Host", "GET / HTTP/1.1\r\n\r\n", http.StatusBadRequest, ""},
				{"bad header line", "GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", http.StatusBadRequest, ""},
				{"bad content length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -4\r\n\r\n", http.StatusBadRequest, ""},
				{"headers too large", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + huge + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge, ""},
				{"asterisk target (net/http answers it)", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusOK, ""},
				{"CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", http.StatusMethodNotAllowed, CodeMethod},
			} {
				res, body := rawExchange(t, fd.addr, tc.raw)
				if res.StatusCode != tc.status {
					t.Errorf("%s: status %d, want %d", tc.name, res.StatusCode, tc.status)
					continue
				}
				if tc.code != "" {
					if e := decodeError(t, res, []byte(body)); e.Code != tc.code || e.Group != "g" {
						t.Errorf("%s: error %+v, want code %s", tc.name, e, tc.code)
					}
				}
			}
			if n := r1.hits.Load(); n != 0 {
				t.Errorf("bad requests reached the replica %d times", n)
			}
		})
	}
}

// TestBadTarget reaches the handler's own check, which net/http's parser
// makes hard to reach over a socket.
func TestBadTarget(t *testing.T) {
	t.Parallel()
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{{id: "r1", url: "http://10.0.0.1:1"}}})
	s := New(g, Options{})
	for _, u := range []*url.URL{
		{Path: "relative"},
		{Scheme: "host", Opaque: "80"}, // GET host:80, as net/http reads it
		{Scheme: "a"},                  // GET a:
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL = u
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Fatalf("%#v: status %d, want 400", u, w.Code)
		}
		if e := decodeError(t, w.Result(), w.Body.Bytes()); e.Code != CodeBadRequest {
			t.Errorf("%#v: error %+v", u, e)
		}
	}
}

// testStalledClients: a client that stalls in its headers, or in the body
// of a proxied call, is cut off after the request timeout, and meanwhile
// the front door keeps serving others.
func testStalledClients(t *testing.T, engine string) {
	t.Parallel()
	bodyErr := make(chan error, 1)
	r1 := startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/upload" {
			_, err := io.ReadAll(r.Body)
			bodyErr <- err
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	const timeout = 200 * time.Millisecond
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()},
		timeouts: protocol.Timeouts{Request: registryDuration(timeout)}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})

	stall := func(raw string) net.Conn {
		conn, err := net.Dial("tcp", fd.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	// cutOff waits (bounded) for the front door to end the exchange: a
	// closed connection, or an error status.
	cutOff := func(name string, conn net.Conn, start time.Time) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(waitBound))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			t.Fatalf("%s: the front door kept the stalled connection for %v", name, waitBound)
		case err == nil && res.StatusCode < 500:
			t.Errorf("%s: answered %d", name, res.StatusCode)
		}
		if d := time.Since(start); d < timeout {
			t.Errorf("%s: cut off %v after it stalled, before the timeout %v", name, d, timeout)
		}
	}

	headersAt := time.Now()
	headers := stall("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	bodyAt := time.Now()
	body := stall("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten b")

	// Not tied up: other clients are served while both stall.
	for range 3 {
		if res, b := do(t, h1Client(t), "GET", fd.url+"/", ""); res.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("while clients stall: %d %q", res.StatusCode, b)
		}
	}
	cutOff("stalled headers", headers, headersAt)
	cutOff("stalled body", body, bodyAt)
	if err := recv(t, bodyErr, "the replica to see the body fail"); err == nil {
		t.Error("the replica read a complete body from a stalled upload")
	}
	fd.stop(t)
	checkIdle(t, g)
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	var log syncBuffer
	at := time.Date(2026, 1, 2, 15, 4, 5, 6e6, time.UTC)
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{r1.spec()}})
	fd := startFrontDoor(t, g, Options{AccessLog: &log, Now: func() time.Time { return at }})
	c := noFollow(t)
	do(t, c, "GET", fd.url+"/prime/7?x=%22q%22", "")

	cfg := groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}}
	g.publish(cfg)
	_, b := do(t, c, "POST", fd.url+"/echo", "12345")
	g.publish(groupConfig{binding: protocol.PerRequest})
	do(t, c, "GET", fd.url+"/none", "")
	fd.stop(t)

	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("access log has %d lines, want 3:\n%s", len(lines), log.String())
	}
	prefix := "time=2026-01-02T15:04:05.006Z client=127.0.0.1:"
	for i, want := range []string{
		`method=GET path="/prime/7?x=%22q%22" proto=HTTP/1.1 status=307 replica=r1 duration_ms=0.000 bytes=0`,
		fmt.Sprintf(`method=POST path="/echo" proto=HTTP/1.1 status=200 replica=r1 duration_ms=0.000 bytes=%d`, len(b)),
		`method=GET path="/none" proto=HTTP/1.1 status=503 replica=- duration_ms=0.000 bytes=`,
	} {
		if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], want) {
			t.Errorf("line %d:\n%s\nwant %s... %s", i, lines[i], prefix, want)
		}
	}
}

// framingReplica answers how it read the request: its framing, whether
// a Content-Length field reached it, and the body.
func framingReplica(t *testing.T) *replica {
	return startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s te=%v cl=%q body=%q", r.Method, r.URL.Path, r.TransferEncoding, r.Header.Get("Content-Length"), b)
	})
}

// closedAfter reports whether the front door closed conn after the
// answers read from br.
func closedAfter(t *testing.T, br *bufio.Reader) bool {
	t.Helper()
	_, err := br.ReadByte()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("no close and no byte within %v", waitBound)
	}
	return err != nil
}

// TestRequestFraming holds both paths (lean: per-request; net/http:
// on-demand) to RFC 9112's framing rules on a kept-alive connection.
func TestRequestFraming(t *testing.T) {
	t.Parallel()
	r1 := framingReplica(t)
	for _, binding := range []string{protocol.OnDemand, protocol.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			g := newTestGroup(groupConfig{binding: binding, members: []spec{r1.spec()}})
			fd := startFrontDoor(t, g, Options{Logger: quietLogger()})
			ok := http.StatusOK
			if binding == protocol.OnDemand {
				ok = http.StatusTemporaryRedirect
			}

			t.Run("Content-Length with Transfer-Encoding is framed chunked, then closed", func(t *testing.T) {
				conn, br := rawConn(t, fd.addr)
				// Framed by Content-Length, the body would be "5\r\nh" and
				// "ello..." the next request.
				_, _ = io.WriteString(conn, "POST /cl-te HTTP/1.1\r\nHost: fd\r\nContent-Length: 4\r\n"+
					"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+
					"GET /next HTTP/1.1\r\nHost: fd\r\n\r\n")
				res, body := readAnswer(t, br, "POST")
				if res.StatusCode != ok {
					t.Fatalf("status %d, want %d: %s", res.StatusCode, ok, body)
				}
				if binding == protocol.PerRequest && body != `POST /cl-te te=[chunked] cl="" body="hello"` {
					t.Errorf("the replica read %s", body)
				}
				if !res.Close || !closedAfter(t, br) {
					t.Error("the connection stayed open after a request with Content-Length and Transfer-Encoding")
				}
			})

			t.Run("HTTP/1.0 with Transfer-Encoding is refused and closed", func(t *testing.T) {
				conn, br := rawConn(t, fd.addr)
				_, _ = io.WriteString(conn, "POST /te10 HTTP/1.0\r\nHost: fd\r\nConnection: keep-alive\r\n"+
					"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
				res, body := readAnswer(t, br, "POST")
				if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Transfer-Encoding") {
					t.Errorf("status %d %s, want 400 naming Transfer-Encoding", res.StatusCode, body)
				}
				if !closedAfter(t, br) {
					t.Error("the connection stayed open after faulty framing")
				}
			})

			t.Run("an empty line before a request is ignored", func(t *testing.T) {
				conn, br := rawConn(t, fd.addr)
				_, _ = io.WriteString(conn, "POST /first HTTP/1.1\r\nHost: fd\r\nContent-Length: 4\r\n\r\nbody\r\n"+
					"GET /second HTTP/1.1\r\nHost: fd\r\n\r\n")
				for _, want := range []string{"/first", "/second"} {
					res, body := readAnswer(t, br, "GET")
					if res.StatusCode != ok {
						t.Fatalf("%s: status %d, want %d: %s", want, res.StatusCode, ok, body)
					}
					if binding == protocol.PerRequest && !strings.Contains(body, want) {
						t.Errorf("%s: the replica answered %s", want, body)
					}
				}
				// Also on a fresh connection, before its first request.
				res, body := rawExchange(t, fd.addr, "\r\n\r\nGET /third HTTP/1.1\r\nHost: fd\r\n\r\n")
				if res.StatusCode != ok {
					t.Errorf("leading empty lines: status %d, want %d: %s", res.StatusCode, ok, body)
				}
			})

			t.Run("an authority-form target is refused", func(t *testing.T) {
				for _, target := range []string{"host:80", "fd:8080", "localhost:80"} {
					conn, br := rawConn(t, fd.addr)
					_, _ = io.WriteString(conn, "GET "+target+" HTTP/1.1\r\nHost: fd\r\n\r\n")
					res, body := readAnswer(t, br, "GET")
					if res.StatusCode != http.StatusBadRequest {
						t.Errorf("GET %s: status %d, want 400: %s", target, res.StatusCode, body)
					}
				}
			})

			t.Run("a header section above 64 KiB gets 431", func(t *testing.T) {
				// head builds a request head of exactly n bytes.
				head := func(n int) string {
					const pre, post = "GET /big HTTP/1.1\r\nHost: fd\r\nX-Big: ", "\r\n\r\n"
					return pre + strings.Repeat("a", n-len(pre)-len(post)) + post
				}
				for _, tc := range []struct {
					size, status int
				}{
					{8 << 10, ok},
					{MaxHeaderBytes, ok},
					{MaxHeaderBytes + 1, http.StatusRequestHeaderFieldsTooLarge},
					{66_000, http.StatusRequestHeaderFieldsTooLarge},
				} {
					res, body := rawExchange(t, fd.addr, head(tc.size))
					if res.StatusCode != tc.status {
						t.Errorf("head of %d bytes: status %d, want %d: %.80s", tc.size, res.StatusCode, tc.status, body)
					}
				}
			})
			if n := g.counter("r1").Proxied.Load(); binding == protocol.OnDemand && n != 0 {
				t.Errorf("on-demand: %d calls proxied", n)
			}
		})
	}
}
