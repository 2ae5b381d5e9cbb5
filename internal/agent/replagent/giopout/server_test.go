package giopout_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopout"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const callee = "corbaloc:iiop:1.2@127.0.0.1:2809/Counter"

// serve starts a Server calling call on a real socket and returns a
// client object (an ORB with opts) for the reference it publishes.
func serve(t *testing.T, call giopout.Caller, opts orb.Options) *orb.Object {
	t.Helper()
	s, err := giopout.New(callee, call, giopout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-served; !errors.Is(err, giopout.ErrClosed) {
			t.Errorf("Serve returned %v after Close, want ErrClosed", err)
		}
	})
	ref := s.Reference("127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port))
	if p, _ := ref.IIOP(); string(p.ObjectKey) != "Counter" {
		t.Fatalf("published key %q, want the callee's, Counter", p.ObjectKey)
	}
	o, err := orb.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	obj, err := o.Resolve(ref.String())
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Each Request is handed to the Caller whole as a GIOP outcall to the
// callee, and the servant gets the Caller's Reply under its own request
// id (the Caller's reply names another one), after a LocateRequest
// answered OBJECT_HERE.
func TestServerPassesCallsAndReplies(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ops []string
	call := func(_ context.Context, c protocol.Outcall) (protocol.OutcallReply, error) {
		m, err := giop.DecodeMessage(c.Body)
		req, ok := m.(*giop.Request)
		if err != nil || !ok || c.Method != protocol.OutcallMethodGIOP || c.URL != callee || c.Key != "" {
			return protocol.OutcallReply{Status: 400, Error: "not a GIOP outcall"}, nil
		}
		mu.Lock()
		ops = append(ops, req.Operation)
		n := int64(len(ops))
		mu.Unlock()
		r := *req
		r.RequestID = 999_999 // the callee's connection numbers its own
		rep := giop.ReplyTo(&r, giop.StatusNoException)
		rep.SetBody(func(e *cdr.Encoder) { e.LongLong(n * 10) })
		b, err := giop.EncodeMessage(rep)
		if err != nil {
			return protocol.OutcallReply{}, err
		}
		return protocol.OutcallReply{Status: 200, Body: b}, nil
	}
	obj := serve(t, call, orb.Options{Locate: true})
	ctx := testCtx(t)
	for want := int64(10); want <= 30; want += 10 {
		res, err := obj.Invoke(ctx, "increment", nil)
		if err != nil {
			t.Fatal(err)
		}
		d := res.Reply.BodyDecoder()
		if got := d.LongLong("result"); d.Err() != nil || got != want {
			t.Fatalf("increment returned %d (%v), want %d", got, d.Err(), want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(ops, ",") != "increment,increment,increment" {
		t.Fatalf("the Caller got %v", ops)
	}
}

// A call made between entries gets BAD_INV_ORDER (COMPLETED_NO); one
// that reached no balancer, or whose callee could not be reached,
// TRANSIENT (COMPLETED_MAYBE).
func TestServerRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reply     protocol.OutcallReply
		err       error
		repoID    string
		completed giop.CompletionStatus
	}{
		{"no entry", protocol.OutcallReply{}, giopout.ErrNoEntry, giopout.RepoIDBadInvOrder, giop.CompletedNo},
		{"no balancer", protocol.OutcallReply{}, errors.New("connection refused"), giop.RepoIDTransient, giop.CompletedMaybe},
		{"callee unreachable", protocol.OutcallReply{Status: 502, Error: "dial: refused"}, nil, giop.RepoIDTransient, giop.CompletedMaybe},
		{"not a reply", protocol.OutcallReply{Status: 200, Body: []byte("GIOP?")}, nil, giop.RepoIDTransient, giop.CompletedMaybe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := serve(t, func(context.Context, protocol.Outcall) (protocol.OutcallReply, error) { return tt.reply, tt.err }, orb.Options{})
			_, err := obj.Invoke(testCtx(t), "increment", nil)
			var ex giop.SystemException
			if !errors.As(err, &ex) || ex.RepositoryID != tt.repoID || ex.Completed != tt.completed {
				t.Fatalf("err = %v, want %s %v", err, tt.repoID, tt.completed)
			}
		})
	}
}

// New refuses a callee that is no IIOP reference and a nil Caller.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, protocol.Outcall) (protocol.OutcallReply, error) {
		return protocol.OutcallReply{}, nil
	}
	if _, err := giopout.New("http://callee/", ok, giopout.Options{}); err == nil || !strings.Contains(err.Error(), `callee "http://callee/"`) {
		t.Errorf("New(http://callee/) = %v", err)
	}
	if _, err := giopout.New(callee, nil, giopout.Options{}); err == nil || !strings.Contains(err.Error(), "Caller is required") {
		t.Errorf("New(nil Caller) = %v", err)
	}
}
