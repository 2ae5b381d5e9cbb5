package monitor_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// BenchmarkHandler is the monitor's per-call cost in a replica: a small
// handler alone (bare), behind Monitor.Handler for a plain call
// (unbound) and for a bound client's call (bound: Fulcrum-Binding and
// Fulcrum-Client, counted per client). No network: the middleware only.
//
//	go test -run XXX -bench Handler ./monitor/
func BenchmarkHandler(b *testing.B) {
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"n":1009,"prime":true}`)
	})
	m, err := monitor.New(monitor.Options{Admin: "http://127.0.0.1:3", Token: "t", Group: "g", FrontDoor: "http://127.0.0.1:1",
		Address: "http://127.0.0.1:2", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		h     http.Handler
		bound bool
	}{{"bare", app, false}, {"unbound", m.Handler(app), false}, {"bound", m.Handler(app), true}} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/prime/1009", nil)
			if c.bound {
				req.Header[protocol.HeaderBinding] = []string{"g/r-1"}
				req.Header[protocol.HeaderClient] = []string{"client-1"}
			}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(w, req)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
