package client_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// realDoor is a real single-node balancer serving group testGroup
// (on-demand, round-robin) over the given replicas on a loopback front
// door.
type realDoor struct {
	b   *balancer.Balancer
	url string
	ids []string
}

func startRealDoor(t *testing.T, replicas ...*fakeReplica) *realDoor {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := balancer.New(balancer.Options{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	gs, _, err := b.PutGroup(protocol.Group{Name: testGroup, FrontDoor: "127.0.0.1:0", Strategy: "round-robin"})
	if err != nil {
		t.Fatal(err)
	}
	d := &realDoor{b: b, url: "http://" + gs.Listening}
	for _, r := range replicas {
		reg, _, err := b.Register(testGroup, protocol.Registration{Address: r.base()})
		if err != nil {
			t.Fatal(err)
		}
		d.ids = append(d.ids, reg.ID)
	}
	return d
}

func (d *realDoor) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.b.Shutdown(ctx); err != nil {
		t.Fatalf("stopping the first balancer: %v", err)
	}
}

func runs(rs ...*fakeReplica) int {
	n := 0
	for _, r := range rs {
		n += len(r.ran())
	}
	return n
}

// TestFrontDoorsFailOverOnlyWhenTheCallDidNotRun: two real balancers
// serve the same group over the same replicas. A replica's 503 is returned
// as is, bound or not, and runs once (the other front door is not tried);
// once the first balancer is stopped, the next call goes through the
// second.
func TestFrontDoorsFailOverOnlyWhenTheCallDidNotRun(t *testing.T) {
	t.Parallel()
	r1, r2 := newFakeReplica(t, "r1", ""), newFakeReplica(t, "r2", "")
	a, b := startRealDoor(t, r1, r2), startRealDoor(t, r1, r2)
	tr := newTransport(client.Options{FrontDoors: []string{a.url, b.url}})

	if code, _ := do(t, tr, http.MethodGet, a.url+"/one", nil); code != http.StatusOK {
		t.Fatalf("first call: %d, want 200", code)
	}
	bnd, ok := tr.Binding(a.url)
	if !ok {
		t.Fatal("no binding after the first call")
	}
	if other, ok := tr.Binding(b.url); !ok || other != bnd {
		t.Fatalf("the second front door's binding %+v, %v; want the group's one binding %+v", other, ok, bnd)
	}

	// The bound replica answers 503: returned, run once.
	r1.unavailable.Store(1)
	r2.unavailable.Store(1)
	if code, _ := do(t, tr, http.MethodGet, a.url+"/two", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("bound replica's 503: got %d, want it returned", code)
	}
	if n := runs(r1, r2); n != 2 {
		t.Fatalf("replicas ran %d calls after a bound replica's 503, want 2: the call ran once", n)
	}
	// Unbound now: the front door sends the call to a replica that
	// answers 503; still returned as is, and run once.
	r1.unavailable.Store(1)
	r2.unavailable.Store(1)
	if code, _ := do(t, tr, http.MethodGet, a.url+"/three", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("replica's 503 after a front door's redirect: got %d, want it returned", code)
	}
	if n := runs(r1, r2); n != 3 {
		t.Fatalf("replicas ran %d calls after an unbound call's 503, want 3: the call ran once", n)
	}
	r1.unavailable.Store(0)
	r2.unavailable.Store(0)
	tr.Unbind(a.url)

	a.stop(t)
	code, got := do(t, tr, http.MethodPost, a.url+"/echo", strings.NewReader("after"))
	if code != http.StatusOK || (got != "r1:after" && got != "r2:after") {
		t.Fatalf("call after the first balancer stopped: %d %q, want 200 from a replica", code, got)
	}
	if n := runs(r1, r2); n != 4 {
		t.Fatalf("replicas ran %d calls, want 4", n)
	}
	if _, ok := tr.Binding(b.url); !ok {
		t.Fatal("no binding after the call through the second front door")
	}
}

// TestFrontDoorsMoveOnAFrontDoorsOwn503: the first balancer has no active
// replica (both drained there), so its front door answers its own 503; the
// call goes through the second, and runs once.
func TestFrontDoorsMoveOnAFrontDoorsOwn503(t *testing.T) {
	t.Parallel()
	r1, r2 := newFakeReplica(t, "r1", ""), newFakeReplica(t, "r2", "")
	a, b := startRealDoor(t, r1, r2), startRealDoor(t, r1, r2)
	for _, id := range a.ids {
		if err := a.b.Drain(testGroup, id); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get(a.url + "/x")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the drained front door answered %d, want its own 503", resp.StatusCode)
	}

	tr := newTransport(client.Options{FrontDoors: []string{a.url, b.url}})
	code, got := do(t, tr, http.MethodPost, a.url+"/echo", strings.NewReader("hi"))
	if code != http.StatusOK || (got != "r1:hi" && got != "r2:hi") {
		t.Fatalf("%d %q, want 200 through the second front door", code, got)
	}
	if n := runs(r1, r2); n != 1 {
		t.Fatalf("replicas ran %d calls, want 1", n)
	}
	// Without the list the same front door's 503 is returned.
	plain := newTransport(client.Options{})
	if code, _ := do(t, plain, http.MethodGet, a.url+"/x", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("without FrontDoors: %d, want the 503", code)
	}
}

// TestInvalidFrontDoorsFailEveryCall: a bad entry is named by every call's
// error, and nothing is sent.
func TestInvalidFrontDoorsFailEveryCall(t *testing.T) {
	t.Parallel()
	r1 := newFakeReplica(t, "r1", "")
	fd := newFakeFrontDoor(t, r1)
	tr := newTransport(client.Options{FrontDoors: []string{fd.srv.URL, "10.0.0.2:8000"}})
	_, _, err := tryDo(tr, http.MethodGet, fd.srv.URL+"/x", nil)
	if err == nil || !strings.Contains(err.Error(), `Options.FrontDoors[1] "10.0.0.2:8000"`) {
		t.Fatalf("error %v, want one naming FrontDoors[1]", err)
	}
	if fd.hitCount() != 0 {
		t.Fatalf("the front door got %d requests, want none", fd.hitCount())
	}
}
