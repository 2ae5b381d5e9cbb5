package httpdoor

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// testFramingOnNetHTTP: the requests net/http serves — after the lean
// engine handed a connection over, or any under stdlib — are held to RFC
// 9112's framing rules as the lean engine's are, on kept-alive
// connections (the framing guard, lean.Guard).
func testFramingOnNetHTTP(t *testing.T, engine string) {
	t.Parallel()
	r1 := framingReplica(t)
	_, fd := perRequestDoor(t, Options{Engine: engine, Logger: quietLogger()}, r1)
	const clte = "POST /cl-te HTTP/1.1\r\nHost: fd\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"5\r\nhello\r\n0\r\n\r\n"
	const next = "GET /next HTTP/1.1\r\nHost: fd\r\n\r\n"

	t.Run("HTTP/1.0 with Transfer-Encoding after an HTTP/1.0 keep-alive request", func(t *testing.T) {
		t.Parallel()
		conn, br := rawConn(t, fd.addr)
		_, _ = io.WriteString(conn, "GET /old HTTP/1.0\r\nHost: fd\r\nConnection: keep-alive\r\n\r\n"+
			"POST /te10 HTTP/1.0\r\nHost: fd\r\nConnection: keep-alive\r\nContent-Length: 4\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+next)
		res, body := readAnswer(t, br, "GET")
		if res.StatusCode != http.StatusOK || res.Close || body != `GET /old te=[] cl="" body=""` {
			t.Fatalf("HTTP/1.0 keep-alive: %d close=%v %s", res.StatusCode, res.Close, body)
		}
		res, body = readAnswer(t, br, "POST")
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("HTTP/1.0 with Transfer-Encoding: status %d, want 400: %s", res.StatusCode, body)
		}
		if e := decodeError(t, res, []byte(body)); e.Code != CodeBadRequest || !strings.Contains(e.Message, "Transfer-Encoding") {
			t.Errorf("error %+v, want bad_request naming Transfer-Encoding", e)
		}
		if !closedAfter(t, br) {
			t.Error("the connection stayed open after faulty framing")
		}
	})

	for _, first := range []struct{ name, raw string }{
		{"after an Expect request", "PUT /expect HTTP/1.1\r\nHost: fd\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\ndata"},
		{"after a large head", "GET /big HTTP/1.1\r\nHost: fd\r\nX-Big: " + strings.Repeat("b", lean.ReadBuffer) + "\r\n\r\n"},
		{"after a plain request", "GET /plain HTTP/1.1\r\nHost: fd\r\n\r\n"},
		{"after OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: fd\r\n\r\n"},
	} {
		t.Run("Content-Length with Transfer-Encoding "+first.name, func(t *testing.T) {
			t.Parallel()
			conn, br := rawConn(t, fd.addr)
			_, _ = io.WriteString(conn, first.raw+clte+next)
			res, body := readAnswer(t, br, "GET")
			for res.StatusCode == http.StatusContinue {
				res, body = readAnswer(t, br, "GET")
			}
			if res.StatusCode != http.StatusOK || res.Close {
				t.Fatalf("first request: %d close=%v %s", res.StatusCode, res.Close, body)
			}
			res, body = readAnswer(t, br, "POST")
			if res.StatusCode != http.StatusOK || body != `POST /cl-te te=[chunked] cl="" body="hello"` {
				t.Fatalf("Content-Length with Transfer-Encoding: %d, the replica read %s", res.StatusCode, body)
			}
			if !res.Close || !closedAfter(t, br) {
				t.Error("the connection stayed open after a request with Content-Length and Transfer-Encoding")
			}
		})
	}

	t.Run("Content-Length with Transfer-Encoding first", func(t *testing.T) {
		t.Parallel()
		conn, br := rawConn(t, fd.addr)
		_, _ = io.WriteString(conn, clte+next)
		res, body := readAnswer(t, br, "POST")
		if res.StatusCode != http.StatusOK || body != `POST /cl-te te=[chunked] cl="" body="hello"` {
			t.Fatalf("%d, the replica read %s", res.StatusCode, body)
		}
		if !res.Close || !closedAfter(t, br) {
			t.Error("the connection stayed open after a request with Content-Length and Transfer-Encoding")
		}
	})

	t.Run("OPTIONS * is answered as net/http does", func(t *testing.T) {
		t.Parallel()
		conn, br := rawConn(t, fd.addr)
		_, _ = io.WriteString(conn, "OPTIONS * HTTP/1.1\r\nHost: fd\r\nContent-Length: 3\r\n\r\nabc"+
			"OPTIONS * HTTP/1.1\r\nHost: fd\r\nContent-Length: 5000\r\n\r\n"+strings.Repeat("a", 5000)+next)
		res, body := readAnswer(t, br, "OPTIONS")
		if res.StatusCode != http.StatusOK || res.ContentLength != 0 || body != "" || res.Close {
			t.Fatalf("OPTIONS *: %d length %d close=%v %q", res.StatusCode, res.ContentLength, res.Close, body)
		}
		// A body above 4 KiB closes the connection (net/http's
		// globalOptionsHandler).
		res, _ = readAnswer(t, br, "OPTIONS")
		if res.StatusCode != http.StatusOK || !res.Close || !closedAfter(t, br) {
			t.Errorf("OPTIONS * with a 5000-byte body: %d, the connection stayed open", res.StatusCode)
		}
	})

	t.Run("a refused upgrade closes the connection", func(t *testing.T) {
		t.Parallel()
		conn, br := rawConn(t, fd.addr)
		_, _ = io.WriteString(conn, "GET /up HTTP/1.1\r\nHost: fd\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"+next)
		res, body := readAnswer(t, br, "GET")
		if res.StatusCode != http.StatusOK || body != `GET /up te=[] cl="" body=""` {
			t.Fatalf("refused upgrade: %d %s", res.StatusCode, body)
		}
		if !res.Close || !closedAfter(t, br) {
			t.Error("the connection stayed open after an upgrade the replica refused")
		}
	})
}

// TestFramingRedirectBinding: a connection of a redirect binding is
// served by net/http from its first request on, both engines; its
// requests are judged too.
func TestFramingRedirectBinding(t *testing.T) {
	t.Parallel()
	r1 := framingReplica(t)
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{r1.spec()}})
			fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
			conn, br := rawConn(t, fd.addr)
			_, _ = io.WriteString(conn, "GET /a HTTP/1.1\r\nHost: fd\r\n\r\n"+
				"POST /b HTTP/1.1\r\nHost: fd\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"+
				"5\r\nhello\r\n0\r\n\r\nGET /c HTTP/1.1\r\nHost: fd\r\n\r\n")
			if res, _ := readAnswer(t, br, "GET"); res.StatusCode != http.StatusTemporaryRedirect || res.Close {
				t.Fatalf("first: %d close=%v", res.StatusCode, res.Close)
			}
			res, _ := readAnswer(t, br, "POST")
			if res.StatusCode != http.StatusTemporaryRedirect || !res.Close || !closedAfter(t, br) {
				t.Errorf("Content-Length with Transfer-Encoding: %d, the connection stayed open", res.StatusCode)
			}
		})
	}
}
