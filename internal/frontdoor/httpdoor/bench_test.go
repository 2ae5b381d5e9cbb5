package httpdoor

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// benchGroup is a Group whose Bound and Observe only count.
type benchGroup struct {
	snap  *frontdoor.Snapshot
	bound atomic.Int64
}

func (g *benchGroup) Snapshot() *frontdoor.Snapshot                  { return g.snap }
func (g *benchGroup) Bound(*frontdoor.Member, string, bool)          { g.bound.Add(1) }
func (g *benchGroup) Observe(*frontdoor.Member, time.Duration, bool) {}

func newBenchGroup(b *testing.B, n int) *benchGroup {
	b.Helper()
	tg := newTestGroup(groupConfig{})
	cfg := groupConfig{name: "prime", binding: protocol.OnDemand}
	for i := range n {
		cfg.members = append(cfg.members, spec{id: string(rune('a' + i)), url: "http://10.0.0.1:9000/api"})
	}
	if st, err := strategy.New("round-robin", nil, strategy.Env{Rand: strategy.NewRand(1)}); err == nil {
		cfg.picker = st.Picker
	}
	tg.publish(cfg)
	return &benchGroup{snap: tg.Snapshot()}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }

// BenchmarkRedirect measures the front door's redirect path in isolation:
// snapshot, pick, Location, headers, counters, Bound.
func BenchmarkRedirect(b *testing.B) {
	g := newBenchGroup(b, 4)
	s := New(g, Options{})
	r := httptest.NewRequest("GET", "http://fd/prime/1234567?verbose=1", nil)
	r.Header.Set(protocol.HeaderClient, "client-1")
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		s.ServeHTTP(w, r)
	}
	if w.code != http.StatusTemporaryRedirect {
		b.Fatalf("status %d", w.code)
	}
}

// BenchmarkRedirectLoopback measures a redirect over a real keep-alive
// connection on loopback.
func BenchmarkRedirectLoopback(b *testing.B) {
	g := newBenchGroup(b, 4)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := New(g, Options{})
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	url := "http://" + ln.Addr().String() + "/prime/1234567"
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusTemporaryRedirect {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}

// rawReplica answers every request on a connection with the same short
// answer, parsing nothing but the head's end: a member that costs the
// benchmark next to nothing.
func rawReplica(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	const answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nprime"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				var pending []byte
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					pending = append(pending, buf[:n]...)
					for {
						i := bytes.Index(pending, []byte("\r\n\r\n"))
						if i < 0 {
							break
						}
						pending = pending[i+4:]
						if _, err := io.WriteString(c, answer); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// BenchmarkProxyLoopback measures a per-request call through the lean path
// over real loopback connections, one at a time, as bench overhead's
// client makes them; allocs/op counts the whole process (the client and
// the member here allocate nothing per call).
func BenchmarkProxyLoopback(b *testing.B) {
	tg := newTestGroup(groupConfig{})
	tg.publish(groupConfig{name: "prime", binding: protocol.PerRequest, members: []spec{{id: "r1", url: rawReplica(b)}}})
	g := &benchGroup{snap: tg.Snapshot()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := New(g, Options{})
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := []byte("GET /prime/1009 HTTP/1.1\r\nHost: fd\r\nUser-Agent: bench\r\n\r\n")
	buf := make([]byte, 4096)
	var got []byte
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		got = got[:0]
		for !bytes.HasSuffix(got, []byte("\r\n\r\nprime")) {
			n, err := conn.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			got = append(got, buf[:n]...)
		}
	}
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) {
		b.Fatalf("answer %q", got)
	}
}
