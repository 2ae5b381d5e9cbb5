package bridge

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// serveOn starts a second bridge of e's group on a listener of its own; it
// returns its URL and the channel Serve's error arrives on.
func serveOn(t *testing.T, e *env) (*Server, string, chan error) {
	t.Helper()
	srv := New(e.g, e.hub, Options{Logger: quietLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), served
}

func recvErr(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitBound):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// TestShutdownFinishesOrderedCallsInFlight: Shutdown waits for a call
// waiting for its reply, which the client then gets; Serve returns
// http.ErrServerClosed.
func TestShutdownFinishesOrderedCallsInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1})
	srv, url, served := serveOn(t, e)
	r := e.reps[0]
	r.pause()
	type result struct {
		a   answer
		err error
	}
	call := make(chan result, 1)
	go func() {
		other := *e
		other.url = url
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		a, err := other.try(&http.Client{Transport: tr}, http.MethodPost, "/increment", session("s", 1), nil)
		call <- result{a, err}
	}()
	select {
	case <-r.held: // the call is appended, its reply awaited
	case <-time.After(waitBound):
		t.Fatal("the call never reached the replica")
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	if err := recvErr(t, served, "Serve to return"); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v, want http.ErrServerClosed", err)
	}
	r.resume()
	var res result
	select {
	case res = <-call:
	case <-time.After(waitBound):
		t.Fatal("the call in flight did not end")
	}
	if res.err != nil || res.a.status != http.StatusOK {
		t.Fatalf("the call in flight at shutdown: %+v %v, want 200", res.a, res.err)
	}
	if err := recvErr(t, shut, "Shutdown to return"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestCloseEndsServe: Close makes Serve return http.ErrServerClosed, and
// a later Serve returns it at once.
func TestCloseEndsServe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1})
	srv, _, served := serveOn(t, e)
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := recvErr(t, served, "Serve to return"); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v, want http.ErrServerClosed", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve after Close returned %v, want http.ErrServerClosed", err)
	}
}
