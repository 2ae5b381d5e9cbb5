package memnet_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/fulcrum-lb/fulcrum/internal/memnet"
)

// TestHTTPOverMemnet serves HTTP on an in-memory listener inside a synctest
// bubble and calls it through the network's dialer.
func TestHTTPOverMemnet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		ln, err := n.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.URL.Path) })}
		go srv.Serve(ln)
		tr := &http.Transport{DialContext: n.Dial}
		c := &http.Client{Transport: tr}
		resp, err := c.Get("http://" + ln.Addr().String() + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello /x" {
			t.Errorf("body %q", body)
		}
		if _, err := n.Listen("tcp", ln.Addr().String()); !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("second listen on %s: %v, want EADDRINUSE", ln.Addr(), err)
		}
		tr.CloseIdleConnections()
		srv.Close()
		if _, err := n.Dial(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial after close: %v, want ECONNREFUSED", err)
		}
	})
}
