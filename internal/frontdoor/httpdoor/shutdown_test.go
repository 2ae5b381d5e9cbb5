package httpdoor

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// testGracefulShutdown: Shutdown stops accepting at once and returns once
// the call in flight has finished, with its full answer.
func testGracefulShutdown(t *testing.T, engine string) {
	t.Parallel()
	for _, binding := range []string{protocol.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			bl := newBlocker()
			r1 := startReplica(t, "r1", "", bl.handler("r1"))
			g := newTestGroup(groupConfig{binding: binding, members: []spec{r1.spec()}})
			fd := startFrontDoor(t, g, Options{Engine: engine})

			type result struct {
				status int
				body   string
				err    error
			}
			inflight := make(chan result, 1)
			c := h1Client(t)
			go func() {
				res, err := c.Get(fd.url + "/slow")
				if err != nil {
					inflight <- result{err: err}
					return
				}
				defer res.Body.Close()
				b, err := io.ReadAll(res.Body)
				inflight <- result{res.StatusCode, string(b), err}
			}()
			recv(t, bl.entered, "the call to reach the replica")

			shut := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitBound)
				defer cancel()
				shut <- fd.Shutdown(ctx)
			}()
			if err := recv(t, fd.serve, "Serve to return"); !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Serve = %v, want http.ErrServerClosed", err)
			}
			close(fd.serve)
			if conn, err := net.Dial("tcp", fd.addr); err == nil {
				conn.Close()
				t.Error("the front door still accepts connections during Shutdown")
			}
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned %v with a call in flight", err)
			default:
			}

			close(bl.release)
			if r := recv(t, inflight, "the call in flight"); r.err != nil || r.status != 200 || r.body != "served by r1" {
				t.Errorf("call in flight: %+v", r)
			}
			if err := recv(t, shut, "Shutdown"); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
			checkIdle(t, g)
		})
	}
}

// testShutdownBounded: an upgraded connection that does not end is closed
// when Shutdown's context ends.
func testShutdownBounded(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", wsEcho)
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}})
	fd := startFrontDoor(t, g, Options{Engine: engine})
	conn, br := dialUpgrade(t, fd.addr, "/ws")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := fd.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(waitBound))
	if _, err := br.ReadByte(); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("upgraded connection still open after a forced shutdown: %v", err)
	}
	// The handler ends once its connection is closed.
	ctx2, cancel2 := context.WithTimeout(context.Background(), waitBound)
	defer cancel2()
	if err := fd.calls.wait(ctx2); err != nil {
		t.Fatal(err)
	}
	checkIdle(t, g)
}
