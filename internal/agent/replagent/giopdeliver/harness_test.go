package giopdeliver_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopdeliver"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func port(ln net.Listener) uint16 { return uint16(ln.Addr().(*net.TCPAddr).Port) }

// server is what the backend servants have in common.
type server interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Reference(host string, port uint16) ior.IOR
}

// serve runs s on a loopback port until the test ends and returns its
// reference.
func serve(t *testing.T, s server) ior.IOR {
	t.Helper()
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		if err := <-served; !errors.Is(err, backend.ErrGIOPServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return s.Reference("127.0.0.1", port(ln))
}

// startCounter serves a Counter servant of c.
func startCounter(t *testing.T, c *backend.Counter) ior.IOR {
	return serve(t, backend.NewGIOPCounter(c, backend.GIOPCounterOptions{}))
}

func newDeliverer(t *testing.T, ref string) *giopdeliver.Deliverer {
	t.Helper()
	d, err := giopdeliver.New(ref, giopdeliver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// entry is an ordered GIOP request as a bridge would log it: a client's
// Request for key (the group's), operation op, without arguments.
func entry(t *testing.T, v giop.Version, o cdr.ByteOrder, id uint32, flags uint8, key, op string) *protocol.OrderedRequest {
	t.Helper()
	req := &giop.Request{Envelope: giop.Envelope{Version: v, Order: o}, RequestID: id, ResponseFlags: flags,
		Target: giop.KeyTarget([]byte(key)), Operation: op}
	if v != giop.V12 {
		req.Principal = []byte{}
	}
	b, err := giop.EncodeMessage(req)
	if err != nil {
		t.Fatal(err)
	}
	return &protocol.OrderedRequest{Kind: protocol.KindGIOP, Body: b}
}

// decodeReply decodes a ReplicaReply's body as a GIOP Reply.
func decodeReply(t *testing.T, b []byte) *giop.Reply {
	t.Helper()
	m, err := giop.DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := m.(*giop.Reply)
	if !ok {
		t.Fatalf("reply body is a %v", m.Type())
	}
	return rep
}

func longLong(t *testing.T, rep *giop.Reply) int64 {
	t.Helper()
	if rep.Status != giop.StatusNoException {
		t.Fatalf("reply status %v", rep.Status)
	}
	d := rep.BodyDecoder()
	v := d.LongLong("result")
	d.Done("result")
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	return v
}
