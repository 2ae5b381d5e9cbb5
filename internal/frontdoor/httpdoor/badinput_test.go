package httpdoor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
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

func TestBadInput(t *testing.T) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	for _, binding := range []string{registry.OnDemand, registry.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			g := newTestGroup(groupConfig{binding: binding, members: []spec{r1.spec()}})
			fd := startFrontDoor(t, g, Options{})
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
	g := newTestGroup(groupConfig{binding: registry.OnDemand, members: []spec{{id: "r1", url: "http://10.0.0.1:1"}}})
	s := New(g, Options{})
	r := httptest.NewRequest("GET", "/", nil)
	r.URL.Path = "relative"
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", w.Code)
	}
	if e := decodeError(t, w.Result(), w.Body.Bytes()); e.Code != CodeBadRequest {
		t.Errorf("error %+v", e)
	}
}

// TestStalledClients: a client that stalls in its headers, or in the body
// of a proxied call, is cut off after the request timeout, and meanwhile
// the front door keeps serving others.
func TestStalledClients(t *testing.T) {
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
	g := newTestGroup(groupConfig{binding: registry.PerRequest, members: []spec{r1.spec()},
		timeouts: registry.Timeouts{Request: registryDuration(timeout)}})
	fd := startFrontDoor(t, g, Options{Logger: quietLogger()})

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
	g := newTestGroup(groupConfig{binding: registry.OnDemand, members: []spec{r1.spec()}})
	fd := startFrontDoor(t, g, Options{AccessLog: &log, Now: func() time.Time { return at }})
	c := noFollow(t)
	do(t, c, "GET", fd.url+"/prime/7?x=%22q%22", "")

	cfg := groupConfig{binding: registry.PerRequest, members: []spec{r1.spec()}}
	g.publish(cfg)
	_, b := do(t, c, "POST", fd.url+"/echo", "12345")
	g.publish(groupConfig{binding: registry.PerRequest})
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
