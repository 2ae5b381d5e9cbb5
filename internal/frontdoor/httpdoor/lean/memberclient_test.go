package lean

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitBound bounds every wait in these tests; nothing waits by sleeping.
const waitBound = 10 * time.Second

// connCounter is a member that counts the connections it accepts.
type connCounter struct {
	*httptest.Server
	conns atomic.Int64
}

func newConnCounter(t *testing.T, h http.HandlerFunc, configure ...func(*http.Server)) *connCounter {
	t.Helper()
	cc := &connCounter{Server: httptest.NewUnstartedServer(h)}
	for _, f := range configure {
		f(cc.Config)
	}
	cc.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			cc.conns.Add(1)
		}
	}
	cc.Start()
	t.Cleanup(cc.Close)
	return cc
}

func newTestMemberClient(t *testing.T) *MemberClient {
	t.Helper()
	var d net.Dialer
	mc := NewMemberClient(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errTestDial, err)
		}
		return c, nil
	})
	t.Cleanup(mc.CloseIdle)
	return mc
}

// send makes one call through mc and reads the whole answer.
func send(t *testing.T, mc *MemberClient, method, url, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	res, err := mc.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func TestMemberClientKeepsConnectionsAlive(t *testing.T) {
	t.Parallel()
	m := newConnCounter(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Sum")
		_, _ = w.Write(append([]byte(r.Method+" "+r.URL.RequestURI()+" "), b...))
		w.Header().Set("X-Sum", "42")
	})
	mc := newTestMemberClient(t)
	for i := range 20 {
		method, body := http.MethodGet, ""
		if i%2 == 1 {
			method, body = http.MethodPost, strings.Repeat("b", i*1000)
		}
		res, got := send(t, mc, method, m.URL+"/echo?i=1", body)
		if want := method + " /echo?i=1 " + body; res.StatusCode != 200 || got != want {
			t.Fatalf("call %d: %d %q", i, res.StatusCode, got[:min(len(got), 40)])
		}
		if res.Trailer.Get("X-Sum") != "42" {
			t.Errorf("call %d: trailer %v", i, res.Trailer)
		}
	}
	if n := m.conns.Load(); n != 1 {
		t.Errorf("%d connections for 20 calls in a row, want 1", n)
	}
}

func TestMemberClientReplacesConnectionsTheMemberClosed(t *testing.T) {
	t.Parallel()
	m := newConnCounter(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}, func(s *http.Server) { s.IdleTimeout = 20 * time.Millisecond }) // the member drops idle connections
	mc := newTestMemberClient(t)
	send(t, mc, http.MethodPost, m.URL+"/", "first")
	// Wait until the member has closed the idle connection.
	deadline := time.NewTimer(waitBound)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		mc.mu.Lock()
		c := mc.idle[strings.TrimPrefix(m.URL, "http://")][0]
		mc.mu.Unlock()
		if !alive(c.nc) {
			break
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatal("the member did not close the idle connection")
		}
	}
	// A POST cannot be sent again once it may have run: it must go on a
	// fresh connection from the start.
	if res, got := send(t, mc, http.MethodPost, m.URL+"/", "second"); res.StatusCode != 200 || got != "ok" {
		t.Fatalf("%d %q", res.StatusCode, got)
	}
	if n := m.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestMemberClientClosesConnectionsNotReadToTheEnd(t *testing.T) {
	t.Parallel()
	m := newConnCounter(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		_, _ = w.Write(bytes.Repeat([]byte("x"), 100_000))
	})
	mc := newTestMemberClient(t)
	req, _ := http.NewRequest(http.MethodGet, m.URL+"/", nil)
	res, err := mc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadFull(res.Body, make([]byte, 10))
	res.Body.Close() // before the end: the connection cannot be reused
	send(t, mc, http.MethodGet, m.URL+"/close", "")
	send(t, mc, http.MethodGet, m.URL+"/", "")
	if n := m.conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (one left half-read, one the member closed)", n)
	}
}

func TestMemberClientCancelsBlockedCalls(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	m := newConnCounter(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mc := newTestMemberClient(t)
	cause := errors.New("call timed out")
	ctx, cancel := context.WithCancelCause(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.URL+"/", nil)
	errc := make(chan error, 1)
	go func() {
		_, err := mc.RoundTrip(req)
		errc <- err
	}()
	select {
	case <-arrived: // the call is waiting for its answer
	case <-time.After(waitBound):
		t.Fatal("the call did not reach the member")
	}
	cancel(cause)
	select {
	case err := <-errc:
		if !errors.Is(err, cause) {
			t.Errorf("err %v, want the cancellation's cause", err)
		}
	case <-time.After(waitBound):
		t.Fatal("RoundTrip still blocked after the cancellation")
	}
	once.Do(func() { close(release) })
}

func TestMemberClientPassesInformationalAnswers(t *testing.T) {
	t.Parallel()
	m := newConnCounter(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		_, _ = io.WriteString(w, "final")
	})
	mc := newTestMemberClient(t)
	var got []int
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		got = append(got, code)
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, m.URL+"/", nil)
	res, err := mc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != "final" || len(got) != 1 || got[0] != http.StatusEarlyHints {
		t.Errorf("answer %d %q, 1xx seen %v", res.StatusCode, b, got)
	}
}

func TestMemberClientDialFailureIsADialError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	mc := newTestMemberClient(t)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if _, err := mc.RoundTrip(req); !errors.Is(err, errTestDial) {
		t.Errorf("err %v, want a dial error", err)
	}
}

func TestMemberClientTakesPlainHTTP1Only(t *testing.T) {
	t.Parallel()
	mc := newTestMemberClient(t)
	for _, tc := range []struct {
		url  string
		hdr  []string
		want bool
	}{
		{"http://a/x", nil, true},
		{"https://a/x", nil, false},
		{"http://a/x", []string{"Upgrade", "websocket"}, false},
		{"http://a/x", []string{"Expect", "100-continue"}, false},
	} {
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			req.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		if got := mc.Takes(req); got != tc.want {
			t.Errorf("%s %v: takes %v, want %v", tc.url, tc.hdr, got, tc.want)
		}
	}
}

func TestMemberClientSweepsIdleConnections(t *testing.T) {
	t.Parallel()
	a := newConnCounter(t, func(w http.ResponseWriter, r *http.Request) {})
	b := newConnCounter(t, func(w http.ResponseWriter, r *http.Request) {})
	mc := newTestMemberClient(t)
	send(t, mc, http.MethodGet, a.URL+"/", "")
	// a's connection has been idle for longer than the idle timeout when
	// b's comes back to the pool: the sweep closes it.
	mc.mu.Lock()
	mc.idle[strings.TrimPrefix(a.URL, "http://")][0].idleAt = time.Now().Add(-2 * mc.idleTimeout)
	mc.lastSweep = time.Now().Add(-mc.idleTimeout) // and the last sweep long ago
	mc.mu.Unlock()
	send(t, mc, http.MethodGet, b.URL+"/", "")
	mc.mu.Lock()
	_, kept := mc.idle[strings.TrimPrefix(a.URL, "http://")]
	n := len(mc.idle[strings.TrimPrefix(b.URL, "http://")])
	mc.mu.Unlock()
	if kept || n != 1 {
		t.Errorf("a's idle connection kept: %v; b's idle connections: %d, want 1", kept, n)
	}
}

// errTestDial marks the test dialer's failures, as the front door's dialer
// marks its own.
var errTestDial = errors.New("lean test: dial failed")
