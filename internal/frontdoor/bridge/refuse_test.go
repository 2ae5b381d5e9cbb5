package bridge

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Requests the bridge refuses before the log: each is answered with its
// status and a JSON error naming what is wrong, and nothing is appended.

func TestBadSessionHeadersAre400AndNeverOrdered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1})
	c := e.client(t)
	long := strings.Repeat("x", protocol.MaxSessionLength+1)
	tests := []struct {
		name   string
		header map[string]string
		says   []string
	}{
		{"session too long", map[string]string{protocol.HeaderSession: long, protocol.HeaderSequence: "1"},
			[]string{protocol.HeaderSession, "129 characters: at most 128 allowed"}},
		{"sequence missing", map[string]string{protocol.HeaderSession: "c1"},
			[]string{protocol.HeaderSequence, "missing: required with " + protocol.HeaderSession}},
		{"sequence not a uint64", map[string]string{protocol.HeaderSession: "c1", protocol.HeaderSequence: "1.5"},
			[]string{protocol.HeaderSequence, `"1.5"`, "decimal integer in [0, 2^64)"}},
		{"sequence alone", map[string]string{protocol.HeaderSequence: "3"},
			[]string{protocol.HeaderSequence, "without " + protocol.HeaderSession}},
		{"reserved prefix", map[string]string{protocol.HeaderSession: "conn:x", protocol.HeaderSequence: "1"},
			[]string{protocol.HeaderSession, "reserved"}},
		{"idempotency key too long", map[string]string{protocol.HeaderIdempotencyKey: long},
			[]string{protocol.HeaderIdempotencyKey, "must be 1 to 123 characters"}},
	}
	for _, tt := range tests {
		a := e.do(t, c, http.MethodPost, "/increment", tt.header, nil)
		if a.status != http.StatusBadRequest {
			t.Fatalf("%s: status %d %s, want 400", tt.name, a.status, a.body)
		}
		d := a.errorDetail(t)
		if d.Code != CodeBadRequest || d.Group != "g" {
			t.Fatalf("%s: error %+v, want code %s of group g", tt.name, d, CodeBadRequest)
		}
		for _, s := range tt.says {
			if !strings.Contains(d.Message, s) {
				t.Fatalf("%s: message %q does not say %q", tt.name, d.Message, s)
			}
		}
	}
	if pos := e.nextPosition(t, "after"); pos != 1 {
		t.Fatalf("the log's next position is %d after refused requests only, want 1: something was appended", pos)
	}
	if n := e.reps[0].counter.State().Increments; n != 0 {
		t.Fatalf("the replica executed %d requests, want 0", n)
	}
}

func TestBodyAboveMaxPayloadIs413BeforeTheLog(t *testing.T) {
	t.Parallel()
	const max = 1024
	e := newEnv(t, envConfig{replicas: 1,
		replicated: protocol.Replicated{MaxPayload: max},
		limits:     replog.Limits{MaxPayload: max}})
	c := e.client(t)

	// With a Content-Length: refused before the body is read.
	a := e.do(t, c, http.MethodPost, "/increment", session("c1", 1), bytes.Repeat([]byte("a"), 2*max))
	if a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d %s, want 413", a.status, a.body)
	}
	if d := a.errorDetail(t); d.Code != protocol.CodePayloadTooLarge || !strings.Contains(d.Reason, "2048 bytes: max_payload is 1024") {
		t.Fatalf("error %+v, want %s naming the size and max_payload", d, protocol.CodePayloadTooLarge)
	}

	// Chunked, without a length: refused once reading passes max_payload.
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/increment", bytes.NewReader(bytes.Repeat([]byte("b"), 3*max)))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(body, []byte(protocol.CodePayloadTooLarge)) {
		t.Fatalf("chunked: %d %s, want 413 %s", res.StatusCode, body, protocol.CodePayloadTooLarge)
	}

	if pos := e.nextPosition(t, "after"); pos != 1 {
		t.Fatalf("the log's next position is %d after refused requests only, want 1: something was appended", pos)
	}
}

func TestTargetsThatAreNotPathsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1})
	for _, tc := range []struct {
		line   string
		status int
	}{
		{"OPTIONS * HTTP/1.1", http.StatusBadRequest},
		{"CONNECT example.com:443 HTTP/1.1", http.StatusMethodNotAllowed},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(conn, tc.line+"\r\nHost: x\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			conn.Close()
			t.Fatalf("%s: %v", tc.line, err)
		}
		res.Body.Close()
		conn.Close()
		if res.StatusCode != tc.status {
			t.Fatalf("%s: status %d, want %d", tc.line, res.StatusCode, tc.status)
		}
	}
	if pos := e.nextPosition(t, "after"); pos != 1 {
		t.Fatalf("next position %d, want 1", pos)
	}
}
