package httpfd

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
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
	cfg := groupConfig{name: "prime", binding: registry.OnDemand}
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
