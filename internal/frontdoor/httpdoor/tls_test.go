package httpdoor

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tlsDoor is a front door terminating TLS with a certificate of its own
// test CA, for localhost and 127.0.0.1.
type tlsDoor struct {
	*frontDoor
	ca   *certstest.CA
	pair certstest.Pair
	set  *certs.ServerSet
}

// startTLSDoor starts a per-request front door over reps terminating TLS;
// cfg completes the certificate configuration (Cert and Key are set).
func startTLSDoor(t *testing.T, opts Options, cfg certs.ServerConfig, reps ...*replica) (*testGroup, *tlsDoor) {
	t.Helper()
	ca := certstest.NewCA(t)
	pair := ca.Leaf(t, "door", certstest.LeafOptions{})
	cfg.Cert, cfg.Key, cfg.ALPN = pair.CertFile, pair.KeyFile, ALPN
	set, err := certs.NewServerSet(cfg, certs.ServerOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var specs []spec
	for _, r := range reps {
		specs = append(specs, r.spec())
	}
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: specs})
	opts.TLS = set.TLSConfig()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	fd := startFrontDoor(t, g, opts)
	fd.url = "https://" + fd.addr
	return g, &tlsDoor{frontDoor: fd, ca: ca, pair: pair, set: set}
}

// tlsClient is a client trusting d's CA: HTTP/1.1 only, or h2 when h2.
func (d *tlsDoor) client(t *testing.T, h2 bool, certs ...tls.Certificate) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: d.ca.Pool(), Certificates: certs}}
	if h2 {
		tr.ForceAttemptHTTP2 = true
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitBound}
}

var tlsBehaviour = []struct {
	name string
	run  func(t *testing.T, engine string)
}{
	{"HTTP1", testTLSHTTP1},
	{"H2ByALPN", testTLSH2},
	{"HandOverKeepsTLSState", testTLSHandOver},
	{"Curl", testTLSCurl},
	{"ClientCertificateRequired", testTLSClientCertificateRequired},
	{"SNI", testTLSSNI},
	{"ReloadUnderLoad", testTLSReloadUnderLoad},
	{"ClientLeavesMidCall", testTLSClientLeaves},
	{"HandshakeBounded", testTLSHandshakeBounded},
}

// TestTLS runs the TLS front door's behaviour on every engine.
func TestTLS(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		for _, tc := range tlsBehaviour {
			t.Run(engine+"/"+tc.name, func(t *testing.T) { tc.run(t, engine) })
		}
	}
}

// testTLSHTTP1: an HTTP/1.1 client over TLS is served (on the lean engine
// without a hand-over) and the replica is told https.
func testTLSHTTP1(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	_, d := startTLSDoor(t, Options{Engine: engine}, certs.ServerConfig{}, r1)
	c := d.client(t, false)
	for range 3 {
		res, b := do(t, c, "POST", d.url+"/x", "body")
		e := decodeEcho(t, b)
		if res.StatusCode != 200 || res.TLS == nil || res.Proto != "HTTP/1.1" {
			t.Fatalf("%d %s over %s, TLS %v", res.StatusCode, b, res.Proto, res.TLS != nil)
		}
		if e.XFProto != "https" || e.Body != "body" || e.Path != "/x" {
			t.Errorf("replica saw %+v, want X-Forwarded-Proto https", e)
		}
	}
	if n := r1.newConns.Load(); n != 1 {
		t.Errorf("%d connections to the replica, want 1 (kept alive)", n)
	}
	checkHandedOver(t, d.frontDoor, engine, 0)
}

// testTLSH2: a client offering h2 gets it by ALPN, served by net/http
// without passing through the lean engine.
func testTLSH2(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	_, d := startTLSDoor(t, Options{Engine: engine}, certs.ServerConfig{}, r1)
	res, b := do(t, d.client(t, true), "GET", d.url+"/h2", "")
	if res.StatusCode != 200 || res.ProtoMajor != 2 {
		t.Fatalf("%d %s over %s, want 200 over HTTP/2", res.StatusCode, b, res.Proto)
	}
	if e := decodeEcho(t, b); e.XFProto != "https" {
		t.Errorf("replica saw %+v, want X-Forwarded-Proto https", e)
	}
	checkHandedOver(t, d.frontDoor, engine, 0)
}

// testTLSHandOver: a request the lean engine hands to net/http (HTTP/1.0)
// keeps its TLS state there: the replica is told https.
func testTLSHandOver(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	_, d := startTLSDoor(t, Options{Engine: engine}, certs.ServerConfig{}, r1)
	conn, err := tls.Dial("tcp", d.addr, &tls.Config{RootCAs: d.ca.Pool(), ServerName: "localhost", NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(waitBound))
	_, _ = io.WriteString(conn, "GET /old HTTP/1.0\r\nHost: fd\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if e := decodeEcho(t, b); res.StatusCode != 200 || e.XFProto != "https" {
		t.Errorf("%d, replica saw %+v; want 200 with X-Forwarded-Proto https", res.StatusCode, e)
	}
	checkHandedOver(t, d.frontDoor, engine, 1)
}

// needCurl returns curl's path; without it the test fails under CI=true
// and is skipped elsewhere.
func needCurl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is required under CI=true: %v", err)
		}
		t.Skip("curl not installed")
	}
	return p
}

// testTLSCurl: curl verifying the front door with --cacert, over HTTP/1.1
// and HTTP/2.
func testTLSCurl(t *testing.T, engine string) {
	t.Parallel()
	curl := needCurl(t)
	r1 := startReplica(t, "r1", "", nil)
	_, d := startTLSDoor(t, Options{Engine: engine}, certs.ServerConfig{}, r1)
	_, port, _ := net.SplitHostPort(d.addr)
	for _, v := range []struct{ flag, proto string }{{"--http1.1", "HTTP/1.1"}, {"--http2", "HTTP/2"}} {
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		out, err := exec.CommandContext(ctx, curl, "-sS", v.flag, "--cacert", d.ca.CertFile,
			"-w", "\n%{http_code} %{http_version}", "https://localhost:"+port+"/curl").CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("curl %s: %v\n%s", v.flag, err, out)
		}
		i := strings.LastIndexByte(string(out), '\n')
		body, status := string(out[:max(i, 0)]), string(out[i+1:])
		want := "200 " + strings.TrimPrefix(v.proto, "HTTP/")
		if status != want {
			t.Errorf("curl %s: %q, want %q", v.flag, status, want)
		}
		if e := decodeEcho(t, []byte(body)); e.XFProto != "https" || e.Path != "/curl" {
			t.Errorf("curl %s: replica saw %+v", v.flag, e)
		}
	}
	// Without the CA curl refuses the certificate.
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if out, err := exec.CommandContext(ctx, curl, "-sS", "https://localhost:"+port+"/").CombinedOutput(); err == nil {
		t.Errorf("curl without --cacert succeeded: %s", out)
	}
}

// testTLSClientCertificateRequired: with client_ca a client without a
// certificate is refused, one with a certificate of the CA served.
func testTLSClientCertificateRequired(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	ca := certstest.NewCA(t)
	_, d := startTLSDoor(t, Options{Engine: engine}, certs.ServerConfig{ClientCA: ca.CertFile}, r1)
	if res, err := d.client(t, false).Get(d.url + "/"); err == nil {
		res.Body.Close()
		t.Fatalf("served %d without a client certificate", res.StatusCode)
	}
	cli := ca.Leaf(t, "client", certstest.LeafOptions{Client: true})
	res, b := do(t, d.client(t, false, cli.TLS), "GET", d.url+"/", "")
	if res.StatusCode != 200 {
		t.Errorf("with a client certificate: %d %s", res.StatusCode, b)
	}
	if r1.hits.Load() != 1 {
		t.Errorf("replica called %d times, want once (the refused client never reached it)", r1.hits.Load())
	}
}

// testTLSSNI: two names, two certificates; the default for others.
func testTLSSNI(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	ca := certstest.NewCA(t)
	a := ca.Leaf(t, "a", certstest.LeafOptions{Names: []string{"a.example"}})
	b := ca.Leaf(t, "b", certstest.LeafOptions{Names: []string{"b.example"}})
	_, d := startTLSDoor(t, Options{Engine: engine}, certs.ServerConfig{Certs: []certs.PairFiles{{Cert: a.CertFile, Key: a.KeyFile}, {Cert: b.CertFile, Key: b.KeyFile}}}, r1)
	pool := ca.Pool()
	pool.AddCert(d.ca.Cert)
	for _, tc := range []struct {
		sni  string
		want certstest.Pair
	}{{"a.example", a}, {"b.example", b}, {"localhost", d.pair}} {
		tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: tc.sni}}
		res, body := do(t, &http.Client{Transport: tr, Timeout: waitBound}, "GET", d.url+"/", "")
		tr.CloseIdleConnections()
		if res.StatusCode != 200 {
			t.Fatalf("sni %s: %d %s", tc.sni, res.StatusCode, body)
		}
		if got := res.TLS.PeerCertificates[0].SerialNumber; got.Cmp(tc.want.Cert.SerialNumber) != 0 {
			t.Errorf("sni %s: served serial %v, want %v", tc.sni, got, tc.want.Cert.SerialNumber)
		}
	}
}

// testTLSReloadUnderLoad: clients keep calling, on kept-alive and on new
// connections, while the certificate files are replaced and reloaded; no
// call fails, and handshakes after the reload see the new certificate.
func testTLSReloadUnderLoad(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	_, d := startTLSDoor(t, Options{Engine: engine}, certs.ServerConfig{}, r1)
	stop := make(chan struct{})
	var calls, failed atomic.Int64
	var firstErr atomic.Value
	// progress is signalled after calls end (at most one signal waits).
	progress := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: d.ca.Pool()}, DisableKeepAlives: i%2 == 1, ForceAttemptHTTP2: i == 2}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: waitBound}
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := c.Get(d.url + "/load")
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if err == nil && res.StatusCode != 200 {
						err = errors.New(res.Status)
					}
				}
				calls.Add(1)
				select {
				case progress <- struct{}{}:
				default:
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	// Let the load run, then rotate twice, each time waiting for calls to
	// go on under the new certificate.
	waitCalls := func(n int64) {
		t.Helper()
		for target := calls.Load() + n; calls.Load() < target; {
			recv(t, progress, "calls of the client loop")
		}
	}
	waitCalls(50)
	var newest certstest.Pair
	for range 2 {
		newest = d.ca.Leaf(t, "door", certstest.LeafOptions{})
		if err := d.set.Reload(); err != nil {
			t.Fatal(err)
		}
		waitCalls(50)
	}
	close(stop)
	wg.Wait()
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d of %d calls failed across the reloads; first: %v", f, calls.Load(), firstErr.Load())
	}
	conn, err := tls.Dial("tcp", d.addr, &tls.Config{RootCAs: d.ca.Pool(), ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(newest.Cert.SerialNumber) != 0 {
		t.Errorf("a new handshake got serial %v, want the reloaded %v", got, newest.Cert.SerialNumber)
	}
}

// testTLSClientLeaves: a TLS client that leaves while its call waits for
// the replica is noticed: the call is logged 499 and no failure is
// counted against the replica.
func testTLSClientLeaves(t *testing.T, engine string) {
	t.Parallel()
	bl := newBlocker()
	r1 := startReplica(t, "r1", "", bl.handler("r1"))
	log := &lineWriter{lines: make(chan string, 16)}
	g, d := startTLSDoor(t, Options{Engine: engine, AccessLog: log}, certs.ServerConfig{}, r1)
	for _, h2 := range []bool{false, true} {
		ctx, cancel := context.WithCancel(boundedCtx(t))
		req, _ := http.NewRequestWithContext(ctx, "GET", d.url+"/", nil)
		done := make(chan error, 1)
		c := d.client(t, h2)
		go func() {
			res, err := c.Do(req)
			if err == nil {
				res.Body.Close()
			}
			done <- err
		}()
		recv(t, bl.entered, "the call to reach the replica")
		if h2 {
			cancel() // an h2 client resets its stream
		} else {
			cancel()
			c.Transport.(*http.Transport).CloseIdleConnections()
		}
		if err := recv(t, done, "the cancelled call"); !errors.Is(err, context.Canceled) {
			t.Errorf("client error %v, want context.Canceled", err)
		}
	}
	// The front door notices while the replica still holds the calls:
	// their lines are written before the replica is released.
	for i := range 2 {
		if line := recv(t, log.lines, "an access log line"); !strings.Contains(line, "status=499") {
			t.Errorf("access log line %d: %s, want status=499", i, line)
		}
	}
	close(bl.release)
	d.stop(t)
	if f := g.counter("r1").Failures.Load(); f != 0 {
		t.Errorf("failures = %d, want 0", f)
	}
	checkIdle(t, g)
}

// lineWriter passes each write (an access log line) on lines.
type lineWriter struct{ lines chan string }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.lines <- string(p)
	return len(p), nil
}

// testTLSHandshakeBounded: a client that never sends its ClientHello is
// closed at the request timeout; one still in its handshake when the front
// door shuts down is closed by Shutdown.
func testTLSHandshakeBounded(t *testing.T, engine string) {
	t.Parallel()
	ca := certstest.NewCA(t)
	pair := ca.Leaf(t, "door", certstest.LeafOptions{})
	set, err := certs.NewServerSet(certs.ServerConfig{Cert: pair.CertFile, Key: pair.KeyFile, ALPN: ALPN}, certs.ServerOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, timeout := range []time.Duration{100 * time.Millisecond, time.Hour} {
		g := newTestGroup(groupConfig{binding: protocol.PerRequest, timeouts: protocol.Timeouts{Request: registryDuration(timeout)}})
		fd := startFrontDoor(t, g, Options{Engine: engine, TLS: set.TLSConfig(), Logger: quietLogger()})
		conn, err := net.Dial("tcp", fd.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(waitBound))
		stopped := make(chan struct{})
		if timeout == time.Hour {
			// Shutdown must not wait an hour for the handshake.
			_, _ = conn.Write([]byte{0x16}) // the first byte of a record
			go func() { defer close(stopped); fd.stop(t) }()
		} else {
			close(stopped)
		}
		_, err = conn.Read(make([]byte, 1))
		<-stopped
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("request timeout %v: read %v, want the front door to close the connection", timeout, err)
		}
		conn.Close()
	}
}
