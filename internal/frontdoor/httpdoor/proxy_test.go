package httpdoor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func testProxyKeepAlive(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "/base", nil)
	r2 := startReplica(t, "r2", "", nil)
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec(), r2.spec()}})
	fd := startFrontDoor(t, g, Options{Engine: engine})
	c := h1Client(t)

	reused := 0
	for i := range 6 {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/prime/%d?v=1", fd.url, i), nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) {
				if info.Reused {
					reused++
				}
			},
		}))
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		e := decodeEcho(t, b)
		want := []string{"r1", "r2"}[i%2]
		wantPath := map[string]string{"r1": "/base", "r2": ""}[want] + fmt.Sprintf("/prime/%d", i)
		if res.StatusCode != 200 || e.Replica != want || e.Path != wantPath || e.Query != "v=1" || e.Proto != "HTTP/1.1" {
			t.Errorf("call %d: %d %+v, want %s at %s", i, res.StatusCode, e, want, wantPath)
		}
	}
	if reused != 5 {
		t.Errorf("client connection reused %d times, want 5 (keep-alive)", reused)
	}
	if n1, n2 := r1.newConns.Load(), r2.newConns.Load(); n1 != 1 || n2 != 1 {
		t.Errorf("upstream connections r1=%d r2=%d, want 1 each (keep-alive)", n1, n2)
	}
	for _, id := range []string{"r1", "r2"} {
		if n := g.counter(id).Proxied.Load(); n != 3 {
			t.Errorf("%s proxied %d, want 3", id, n)
		}
	}
	checkIdle(t, g)
}

func testProxyForwardedHeaders(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}})
	fd := startFrontDoor(t, g, Options{Engine: engine})
	c := h1Client(t)

	_, b := do(t, c, "GET", fd.url+"/", "")
	e := decodeEcho(t, b)
	if e.XFF != "127.0.0.1" || e.XFProto != "http" || e.XFHost != fd.addr || e.Host != r1.addr {
		t.Errorf("without a prior chain: xff=%q proto=%q host=%q, Host=%q", e.XFF, e.XFProto, e.XFHost, e.Host)
	}
	_, b = do(t, c, "GET", fd.url+"/", "", "X-Forwarded-For", "203.0.113.7", "X-Forwarded-Proto", "https")
	e = decodeEcho(t, b)
	if e.XFF != "203.0.113.7, 127.0.0.1" || e.XFProto != "http" {
		t.Errorf("with a prior chain: xff=%q proto=%q", e.XFF, e.XFProto)
	}
}

func testProxyH2CInbound(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}})
	fd := startFrontDoor(t, g, Options{Engine: engine})
	c := h2cClient(t)

	res, b := do(t, c, "POST", fd.url+"/echo", "over h2c")
	e := decodeEcho(t, b)
	if res.ProtoMajor != 2 || res.StatusCode != 200 || e.Body != "over h2c" {
		t.Fatalf("h2c call: %s %d %+v", res.Proto, res.StatusCode, e)
	}
	if e.Proto != "HTTP/1.1" {
		t.Errorf("plain h2 call went upstream over %s, want HTTP/1.1 (any replica speaks it)", e.Proto)
	}
	_, b = do(t, c, "GET", fd.url+"/t", "", "TE", "trailers")
	if e := decodeEcho(t, b); e.Proto != "HTTP/2.0" {
		t.Errorf("h2 call with TE: trailers went upstream over %s, want HTTP/2.0 (h2c)", e.Proto)
	}
	checkIdle(t, g)
}

// grpcEcho is a gRPC-like bidirectional streaming handler: it echoes each
// newline-terminated message as it arrives and ends with trailers.
func grpcEcho(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || r.Header.Get("Content-Type") != "application/grpc" {
		http.Error(w, "want gRPC over HTTP/2, got "+r.Proto, http.StatusHTTPVersionNotSupported)
		return
	}
	w.Header().Set("Content-Type", "application/grpc")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	br := bufio.NewReader(r.Body)
	n := 0
	for {
		msg, err := br.ReadString('\n')
		if err != nil {
			break
		}
		n++
		_, _ = io.WriteString(w, "echo:"+msg)
		_ = rc.Flush()
	}
	w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
	w.Header().Set(http.TrailerPrefix+"Grpc-Message", fmt.Sprintf("%d messages", n))
}

func testProxyGRPCStreaming(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", withSlow(t, grpcEcho))
	const requestTimeout = 200 * time.Millisecond
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()},
		timeouts: protocol.Timeouts{Request: registryDuration(requestTimeout)}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
	c := h2cClient(t)

	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(boundedCtx(t), "POST", fd.url+"/echo.Echo/Chat", pr)
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.ProtoMajor != 2 {
		t.Fatalf("status %d over %s", res.StatusCode, res.Proto)
	}
	br := bufio.NewReader(res.Body)
	// Each message is answered before the next is sent: both directions
	// stream through the front door, for longer than the request timeout
	// (gRPC calls carry their own deadlines): a witness call started after
	// the first message ends at the timeout, before the last ones.
	n := 0
	for ; n < 4; n++ {
		if n == 2 {
			witnessTimeout(t, fd)
		}
		msg := fmt.Sprintf("message %d\n", n)
		if _, err := io.WriteString(pw, msg); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != "echo:"+msg {
			t.Fatalf("echo of %q = %q, %v", msg, got, err)
		}
	}
	pw.Close()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("end of stream: %q, %v", rest, err)
	}
	if got := res.Trailer.Get("Grpc-Status"); got != "0" {
		t.Errorf("trailer Grpc-Status = %q, want 0 (trailers %v)", got, res.Trailer)
	}
	if got := res.Trailer.Get("Grpc-Message"); got != fmt.Sprintf("%d messages", n) {
		t.Errorf("trailer Grpc-Message = %q", got)
	}
	if n := g.counter("r1").Proxied.Load(); n != 2 {
		t.Errorf("proxied %d, want 2 (the stream and the witness call)", n)
	}
}

// wsEcho accepts an Upgrade: websocket and echoes raw bytes back.
func wsEcho(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "upgrade required", http.StatusUpgradeRequired)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	_ = brw.Flush()
	_, _ = io.Copy(conn, brw)
}

// dialUpgrade opens a raw connection to addr and upgrades it to websocket.
func dialUpgrade(t *testing.T, addr, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(waitBound))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", path, addr)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(res.Header.Get("Upgrade"), "websocket") {
		t.Fatalf("upgrade answered %d %v", res.StatusCode, res.Header)
	}
	return conn, br
}

func testProxyWebSocket(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", withSlow(t, wsEcho))
	// Long enough for net/http (EngineStdlib) to read the upgrade's head
	// on a busy machine: its ReadHeaderTimeout is the request timeout too.
	const requestTimeout = 200 * time.Millisecond
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()},
		timeouts: protocol.Timeouts{Request: registryDuration(requestTimeout)}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})

	conn, br := dialUpgrade(t, fd.addr, "/ws")
	// The session outlives the request timeout, which only bounds the wait
	// for the 101: a witness call started after the first ping ends at the
	// timeout, before the last ones.
	for i := range 4 {
		if i == 2 {
			witnessTimeout(t, fd)
		}
		msg := fmt.Sprintf("ping %d\n", i)
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != msg {
			t.Fatalf("echo of %q = %q, %v", msg, got, err)
		}
	}
	if n := g.live("r1").Inflight.Load(); n != 1 {
		t.Errorf("in flight during the session = %d, want 1", n)
	}
	conn.Close()
	fd.stop(t) // waits for the upgraded call to end
	checkIdle(t, g)
}

func testProxyNoReplica(t *testing.T, engine string) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		binding string
		members []spec
		reason  string
	}{
		{"redirect, empty group", protocol.OnDemand, nil, "the group has no replicas"},
		{"proxy, empty group", protocol.PerRequest, nil, "the group has no replicas"},
		{"redirect, all down", protocol.PerSession, []spec{
			{id: "a", url: "http://10.0.0.1:1", state: protocol.StateDown},
			{id: "b", url: "http://10.0.0.1:2", state: protocol.StateEjected},
			{id: "c", url: "http://10.0.0.1:3", state: protocol.StateDown},
		}, "0 of 3 replicas active (2 down, 1 ejected)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGroup(groupConfig{name: "prime", binding: tc.binding, members: tc.members})
			fd := startFrontDoor(t, g, Options{Engine: engine})
			res, b := do(t, noFollow(t), "GET", fd.url+"/prime/7", "")
			if res.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503", res.StatusCode)
			}
			e := decodeError(t, res, b)
			if e.Code != CodeNoReplica || e.Group != "prime" || e.Reason != tc.reason || e.Message == "" {
				t.Errorf("error %+v, want no_replica for prime because %q", e, tc.reason)
			}
			if res.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After on 503")
			}
		})
	}
}

// testProxyDialFailureRetried: the first member refuses connections; the
// call goes to the next one and runs exactly once.
func testProxyDialFailureRetried(t *testing.T, engine string) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		client func(*testing.T) *http.Client
		hdr    []string
		h      http.HandlerFunc
	}{
		{"http1", h1Client, nil, nil},
		{"grpc over h2c", h2cClient, []string{"Content-Type", "application/grpc", "TE", "trailers"}, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/grpc")
			_, _ = fmt.Fprintf(w, `{"replica":"live","proto":%q,"body":%q}`, r.Proto, b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			live := startReplica(t, "live", "", tc.h)
			g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{
				{id: "dead", url: "http://" + deadAddress(t)}, {id: "live", url: live.url},
			}})
			fd := startFrontDoor(t, g, Options{Engine: engine})
			res, b := do(t, tc.client(t), "POST", fd.url+"/work", "job-1", tc.hdr...)
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, b)
			}
			if e := decodeEcho(t, b); e.Replica != "live" || e.Body != "job-1" {
				t.Errorf("answer %+v", e)
			}
			if n := live.hits.Load(); n != 1 {
				t.Errorf("live replica ran the call %d times, want 1", n)
			}
			if ev := recv(t, g.observed, "Observe"); ev != (observeEvent{"dead", true}) {
				t.Errorf("first observation %+v, want dead failed", ev)
			}
			if ev := recv(t, g.observed, "Observe"); ev != (observeEvent{"live", false}) {
				t.Errorf("second observation %+v, want live ok", ev)
			}
			if f := g.counter("dead").Failures.Load(); f != 1 {
				t.Errorf("dead failures = %d, want 1", f)
			}
			checkIdle(t, g)
		})
	}
}

func testProxyAllDialsFail(t *testing.T, engine string) {
	t.Parallel()
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{
		{id: "a", url: "http://" + deadAddress(t)}, {id: "b", url: "http://" + deadAddress(t)},
	}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
	res, b := do(t, h1Client(t), "GET", fd.url+"/", "")
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	e := decodeError(t, res, b)
	if e.Code != CodeNoReplica || !strings.Contains(e.Reason, "connecting to a, b failed") {
		t.Errorf("error %+v", e)
	}
	checkIdle(t, g)
}

// testProxyNoReplay: a call that reached a replica and then failed is not
// sent to another one.
func testProxyNoReplay(t *testing.T, engine string) {
	t.Parallel()
	crash := startReplica(t, "crash", "", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	other := startReplica(t, "other", "", nil)
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{crash.spec(), other.spec()}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})

	res, b := do(t, h1Client(t), "POST", fd.url+"/pay", "once")
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	if e := decodeError(t, res, b); e.Code != CodeBadGateway {
		t.Errorf("error %+v", e)
	}
	if c, o := crash.hits.Load(), other.hits.Load(); c != 1 || o != 0 {
		t.Errorf("runs: crash %d, other %d; want 1 and 0", c, o)
	}
	if f := g.counter("crash").Failures.Load(); f != 1 {
		t.Errorf("failures = %d, want 1", f)
	}
	checkIdle(t, g)
}

// testProxyRetrySetting: a call that reached its replica, which then died
// without a response byte, is sent to another replica only under retry:
// idempotent, and only for GET, HEAD and OPTIONS; by default (unsent)
// never. The call goes out on a kept-alive connection, as a replica dying
// under load finds it.
func testProxyRetrySetting(t *testing.T, engine string) {
	t.Parallel()
	for _, tc := range []struct {
		retry, method string
		replayed      bool
	}{
		{"", http.MethodGet, false},
		{protocol.RetryUnsent, http.MethodGet, false},
		{protocol.RetryUnsent, http.MethodHead, false},
		{protocol.RetryIdempotent, http.MethodGet, true},
		{protocol.RetryIdempotent, http.MethodHead, true},
		{protocol.RetryIdempotent, http.MethodOptions, true},
		{protocol.RetryIdempotent, http.MethodPost, false},
		{protocol.RetryIdempotent, http.MethodDelete, false},
	} {
		t.Run(tc.retry+"/"+tc.method, func(t *testing.T) {
			t.Parallel()
			var died atomic.Int64
			dying := startReplica(t, "dying", "", func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/warm" {
					_, _ = io.WriteString(w, "warm")
					return
				}
				_, _ = io.ReadAll(r.Body)
				died.Add(1)
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
			})
			other := startReplica(t, "other", "", nil)
			g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{dying.spec(), other.spec()},
				picker: newFirst, retry: tc.retry})
			fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
			client := h1Client(t)
			if res, b := do(t, client, http.MethodGet, fd.url+"/warm", ""); res.StatusCode != 200 {
				t.Fatalf("warm-up: %d %s", res.StatusCode, b)
			}
			body := ""
			if tc.method == http.MethodPost {
				body = "once"
			}
			res, b := do(t, client, tc.method, fd.url+"/call", body)
			want, wantOther := http.StatusBadGateway, int64(0)
			if tc.replayed {
				want, wantOther = http.StatusOK, 1
			}
			if res.StatusCode != want {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, want, b)
			}
			if d, o := died.Load(), other.hits.Load(); d != 1 || o != wantOther {
				t.Errorf("runs: dying %d, other %d; want 1 and %d", d, o, wantOther)
			}
			if f := g.counter("dying").Failures.Load(); f != 1 {
				t.Errorf("dying's failures = %d, want 1", f)
			}
			if n := dying.newConns.Load(); n != 1 {
				t.Errorf("%d connections to the dying replica, want 1 (the call is not sent to it again)", n)
			}
			checkIdle(t, g)
		})
	}
}

// testProxySlowClientsAreNotReplicaFailures: clients that trickle their
// request bodies past the request timeout get 504, and the healthy
// replica is not blamed: no failure counted, no failed observation (twelve
// such uploads once ejected a replica).
func testProxySlowClientsAreNotReplicaFailures(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()},
		timeouts: protocol.Timeouts{Request: registryDuration(100 * time.Millisecond)}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
	const uploads = 12
	type answer struct {
		status int
		err    error
	}
	answers := make(chan answer, uploads)
	for range uploads {
		conn, br := rawConn(t, fd.addr)
		// 1000 bytes announced, 2 sent, then nothing.
		if _, err := io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: fd\r\nContent-Length: 1000\r\n\r\nab"); err != nil {
			t.Fatal(err)
		}
		go func() {
			res, err := http.ReadResponse(br, &http.Request{Method: http.MethodPost})
			if err != nil {
				answers <- answer{err: err}
				return
			}
			res.Body.Close()
			answers <- answer{status: res.StatusCode}
		}()
	}
	for range uploads {
		a := recv(t, answers, "a slow upload's answer")
		if a.err != nil || a.status != http.StatusGatewayTimeout {
			t.Errorf("slow upload answered %d, %v; want 504", a.status, a.err)
		}
	}
	if f := g.counter("r1").Failures.Load(); f != 0 {
		t.Errorf("the replica's failures = %d after slow clients, want 0", f)
	}
	for {
		select {
		case ev := <-g.observed:
			if ev.failed {
				t.Errorf("a slow client's call was observed as %s's failure", ev.replica)
			}
			continue
		default:
		}
		break
	}
	checkIdle(t, g)
	// The replica still serves.
	if res, b := do(t, h1Client(t), "GET", fd.url+"/after", ""); res.StatusCode != 200 {
		t.Errorf("after the slow clients: %d %s", res.StatusCode, b)
	}
}

// testProxyViaHopGuard: proxied requests carry a Via entry naming this
// balancer, after those they came with; a request that already carries it
// is answered 508 and not forwarded; a group whose replica is its own front
// door answers 508 at the second pass instead of looping.
func testProxyViaHopGuard(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Join(r.Header.Values("Via"), ", "))
	})
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
	c := h1Client(t)

	res, b := do(t, c, "GET", fd.url+"/plain", "")
	if want := "1.1 " + viaName; res.StatusCode != 200 || string(b) != want {
		t.Errorf("plain request: %d, the replica saw Via %q; want %q", res.StatusCode, b, want)
	}
	res, b = do(t, c, "GET", fd.url+"/chained", "", "Via", "1.0 fred, 1.1 p.example.net")
	if want := "1.0 fred, 1.1 p.example.net, 1.1 " + viaName; res.StatusCode != 200 || string(b) != want {
		t.Errorf("request through other proxies: %d, the replica saw Via %q; want %q", res.StatusCode, b, want)
	}
	hits := r1.hits.Load()
	for _, via := range []string{"1.1 " + viaName, "1.0 fred, 1.1 " + viaName + " (fulcrum)", "2 " + viaName} {
		res, b = do(t, c, "POST", fd.url+"/looped", "body", "Via", via)
		if res.StatusCode != http.StatusLoopDetected {
			t.Errorf("Via %q: %d %s, want 508", via, res.StatusCode, b)
			continue
		}
		if e := decodeError(t, res, b); e.Code != CodeLoopDetected {
			t.Errorf("Via %q: error %+v", via, e)
		}
	}
	if n := r1.hits.Load() - hits; n != 0 {
		t.Errorf("looped requests reached the replica %d times", n)
	}

	// A replica address that is the group's own front door.
	self := newTestGroup(groupConfig{binding: protocol.PerRequest})
	sfd := startFrontDoor(t, self, Options{Engine: engine, Logger: quietLogger()})
	self.publish(groupConfig{binding: protocol.PerRequest, members: []spec{{id: "self", url: sfd.url}}})
	res, b = do(t, c, "GET", sfd.url+"/loop", "")
	if res.StatusCode != http.StatusLoopDetected {
		t.Fatalf("self-looping group: %d %s, want 508", res.StatusCode, b)
	}
	if n := self.counter("self").Proxied.Load(); n != 1 {
		t.Errorf("self-looping group forwarded %d calls, want 1 (the first pass)", n)
	}
	checkIdle(t, g)
	checkIdle(t, self)
}

// testProxyDialFailureRetriedOnPooledConnection: a call whose first
// member cannot be reached goes to the next one on a kept-alive connection
// from the pool, every time.
func testProxyDialFailureRetriedOnPooledConnection(t *testing.T, engine string) {
	t.Parallel()
	live := startReplica(t, "live", "", nil)
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, picker: newFirst, members: []spec{
		{id: "dead", url: "http://" + deadAddress(t)}, {id: "live", url: live.url},
	}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
	c := h1Client(t)
	for i := range 3 {
		res, b := do(t, c, "GET", fd.url+"/work", "")
		if res.StatusCode != 200 {
			t.Fatalf("call %d: status %d: %s", i, res.StatusCode, b)
		}
		if e := decodeEcho(t, b); e.Replica != "live" {
			t.Errorf("call %d: answer %+v", i, e)
		}
	}
	if n := live.newConns.Load(); n != 1 {
		t.Errorf("%d connections to the live replica, want 1 (kept alive)", n)
	}
	if f := g.counter("dead").Failures.Load(); f != 3 {
		t.Errorf("dead failures = %d, want 3", f)
	}
	checkIdle(t, g)
}

// blocker is a replica handler that holds each call until released.
type blocker struct {
	entered chan string
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan string, 16), release: make(chan struct{})}
}

func (b *blocker) handler(id string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b.entered <- id
		<-b.release
		_, _ = io.WriteString(w, "served by "+id)
	}
}

func testProxyInflightLimit(t *testing.T, engine string) {
	t.Parallel()
	bl := newBlocker()
	r1 := startReplica(t, "r1", "", bl.handler("r1"))
	r2 := startReplica(t, "r2", "", bl.handler("r2"))
	cfg := groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}, maxInflight: 1, picker: newFirst}
	g := newTestGroup(cfg)
	fd := startFrontDoor(t, g, Options{Engine: engine})
	c := h1Client(t)

	var wg sync.WaitGroup
	results := make(chan string, 4)
	call := func() {
		defer wg.Done()
		res, err := c.Get(fd.url + "/")
		if err != nil {
			results <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		results <- fmt.Sprintf("%d %s", res.StatusCode, b)
	}
	wg.Add(1)
	go call()
	recv(t, bl.entered, "the first call")

	res, b := do(t, c, "GET", fd.url+"/", "")
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("at the limit: status %d, want 503", res.StatusCode)
	}
	if e := decodeError(t, res, b); e.Code != CodeOverloaded {
		t.Errorf("at the limit: %+v, want overloaded", e)
	}

	// With a second member, the picker's full choice spills over to it.
	cfg.members = append(cfg.members, r2.spec())
	g.publish(cfg)
	wg.Add(1)
	go call()
	if id := recv(t, bl.entered, "the spilled call"); id != "r2" {
		t.Errorf("spilled call went to %s, want r2", id)
	}
	close(bl.release)
	wg.Wait()
	close(results)
	var got []string
	for r := range results {
		got = append(got, r)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "200 served by") || !strings.HasPrefix(got[1], "200 served by") {
		t.Errorf("results %q", got)
	}
	checkIdle(t, g)
}

type recordingObserver struct {
	mu    sync.Mutex
	calls []observeEvent
}

func (o *recordingObserver) Observe(r *strategy.Replica, _ time.Duration, failed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, observeEvent{r.ID, failed})
}

func testProxyObserver(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	obs := &recordingObserver{}
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}, observer: obs})
	fd := startFrontDoor(t, g, Options{Engine: engine})
	c := h1Client(t)
	if res, _ := do(t, c, "GET", fd.url+"/ok", ""); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if res, _ := do(t, c, "GET", fd.url+"/fail", ""); res.StatusCode != 500 {
		t.Fatalf("status %d, want the replica's 500", res.StatusCode)
	}
	obs.mu.Lock()
	got := append([]observeEvent(nil), obs.calls...)
	obs.mu.Unlock()
	if len(got) != 2 || got[0] != (observeEvent{"r1", false}) || got[1] != (observeEvent{"r1", true}) {
		t.Errorf("observer saw %+v", got)
	}
	if f := g.counter("r1").Failures.Load(); f != 1 {
		t.Errorf("failures = %d, want 1 (the 5xx)", f)
	}
}

// testProxyCallTimeout: a replica slower than the request timeout gets
// 504, and the call's slot is freed.
func testProxyCallTimeout(t *testing.T, engine string) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	r1 := startReplica(t, "r1", "", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()},
		timeouts: protocol.Timeouts{Request: registryDuration(100 * time.Millisecond)}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
	res, b := do(t, h1Client(t), "GET", fd.url+"/", "")
	if res.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	if e := decodeError(t, res, b); e.Code != CodeGatewayTimeout {
		t.Errorf("error %+v", e)
	}
	checkIdle(t, g)
}

// testProxyClientGone: a client that hangs up mid-call is not the
// replica's failure.
func testProxyClientGone(t *testing.T, engine string) {
	t.Parallel()
	bl := newBlocker()
	r1 := startReplica(t, "r1", "", bl.handler("r1"))
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}})
	fd := startFrontDoor(t, g, Options{Engine: engine})

	ctx, cancel := context.WithCancel(boundedCtx(t))
	req, _ := http.NewRequestWithContext(ctx, "GET", fd.url+"/", nil)
	done := make(chan error, 1)
	c := h1Client(t)
	go func() {
		res, err := c.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	recv(t, bl.entered, "the call to reach the replica")
	cancel()
	if err := recv(t, done, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v, want context.Canceled", err)
	}
	fd.stop(t)
	close(bl.release)
	if f := g.counter("r1").Failures.Load(); f != 0 {
		t.Errorf("failures = %d, want 0", f)
	}
	if n := len(g.observed); n != 0 {
		t.Errorf("%d observations of a call the client abandoned, want 0", n)
	}
	checkIdle(t, g)
}
