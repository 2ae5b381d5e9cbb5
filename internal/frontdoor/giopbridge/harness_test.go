package giopbridge_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopdeliver"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopbridge"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// groupKey is the object key of the group in the tests: its name.
const groupKey = "g"

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rig is a replicated GIOP group on real parts: a bbolt log, a hub, a
// bridge on a loopback port, and replicas, each a Counter servant with
// an agent loop that streams the hub's log and delivers it through
// giopdeliver.
type rig struct {
	t        testing.TB
	hub      *replhub.Hub
	addr     string
	bridge   *giopbridge.Server
	mu       sync.Mutex
	live     []replhub.Peer
	replicas []*replica
}

// replica is a Counter servant and its agent.
type replica struct {
	id      string
	counter *backend.Counter
	mu      sync.Mutex
	// applied is the last position delivered; changed is closed and
	// replaced at every delivery.
	applied uint64
	changed chan struct{}
}

type rigOptions struct {
	replicas   int
	maxPayload int
	bridge     giopbridge.Options
}

func newRig(t testing.TB, o rigOptions) *rig {
	t.Helper()
	if o.maxPayload == 0 {
		o.maxPayload = 64 << 10
	}
	db, err := boltlog.Open(filepath.Join(t.TempDir(), "log.db"), boltlog.Options{SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l, err := db.Group(groupKey, boltlog.GroupOptions{Limits: replog.Limits{MaxPayload: o.maxPayload, MaxLogBytes: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t}
	r.hub = replhub.New(replhub.Options{Group: groupKey, Instance: "i1", Log: l, Live: r.peers, CompareWindow: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); r.hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-hubDone })
	for i := range o.replicas {
		r.startReplica(t, string(rune('a'+i)))
	}
	if o.bridge.Key == nil {
		o.bridge.Key = []byte(groupKey)
	}
	br := giopbridge.New(r.hub, o.bridge)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- br.Serve(ln) }()
	t.Cleanup(func() {
		_ = br.Close()
		if err := <-served; !errors.Is(err, giopbridge.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	r.addr = ln.Addr().String()
	r.bridge = br
	return r
}

func (r *rig) peers() []replhub.Peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]replhub.Peer(nil), r.live...)
}

// startReplica serves a Counter and runs its agent: it streams the log
// from the start and delivers each entry in order, posting the reply, and
// answers reply requests from the replies it keeps.
func (r *rig) startReplica(t testing.TB, id string) *replica {
	t.Helper()
	c := &backend.Counter{}
	s := backend.NewGIOPCounter(c, backend.GIOPCounterOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-served
	})
	d, err := giopdeliver.New(s.Reference("127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port)).String(), giopdeliver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := &replica{id: id, counter: c, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	hello := make(chan struct{})
	go func() {
		defer close(done)
		defer d.Close()
		cache := map[uint64]protocol.ReplicaReply{}
		for ev := range r.hub.Stream(ctx, id, 0) {
			switch ev.Type {
			case protocol.LogEventHello:
				close(hello)
			case protocol.LogEventEntry:
				rr, err := d.Deliver(ctx, ev.Position, ev.Request)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("replica %s: %v", id, err)
					}
					return
				}
				cache[ev.Position] = rr
				r.hub.Replies(id, protocol.ReplyBatch{Replies: []protocol.ReplicaReply{rr}})
				rep.mu.Lock()
				rep.applied = ev.Position
				close(rep.changed)
				rep.changed = make(chan struct{})
				rep.mu.Unlock()
			case protocol.LogEventReplyRequest:
				rr, ok := cache[ev.Position]
				if !ok {
					rr = protocol.ReplicaReply{Position: ev.Position, Evicted: true}
				}
				r.hub.Replies(id, protocol.ReplyBatch{Replies: []protocol.ReplicaReply{rr}})
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-hello:
	case <-time.After(10 * time.Second):
		t.Fatalf("replica %s: no hello on the log stream", id)
	}
	r.mu.Lock()
	r.live = append(r.live, replhub.Peer{ID: id, Address: "agent-" + id})
	r.replicas = append(r.replicas, rep)
	r.mu.Unlock()
	return rep
}

// waitIncrements waits until every replica's counter counts n
// increments.
func (r *rig) waitIncrements(ctx context.Context, n uint64) {
	r.t.Helper()
	for _, rep := range r.replicas {
		for {
			rep.mu.Lock()
			ch := rep.changed
			rep.mu.Unlock()
			if rep.counter.State().Increments >= n {
				break
			}
			select {
			case <-ch:
			case <-ctx.Done():
				r.t.Fatalf("replica %s: %d increments, want %d", rep.id, rep.counter.State().Increments, n)
			}
		}
	}
}

// client is a raw GIOP connection to the bridge.
type client struct {
	t  testing.TB
	nc net.Conn
	r  *wire.Reader
	w  *wire.Writer
}

func (r *rig) dial(t testing.TB) *client {
	t.Helper()
	nc, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &client{t: t, nc: nc, r: wire.NewReader(nc, giop.Limits{}), w: wire.NewWriter(nc)}
}

func (c *client) send(m giop.Message) {
	c.t.Helper()
	if err := c.w.Write(m); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next message; nil at the end of the stream.
func (c *client) next() giop.Message {
	c.t.Helper()
	b, err := c.r.Next()
	if err != nil {
		return nil
	}
	m, err := giop.DecodeMessage(b)
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

func (c *client) reply() *giop.Reply {
	c.t.Helper()
	m := c.next()
	rep, ok := m.(*giop.Reply)
	if !ok {
		c.t.Fatalf("got %v, want a Reply", m)
	}
	return rep
}

// request is a Request of op without arguments for key.
func request(v giop.Version, o cdr.ByteOrder, id uint32, key, op string, contexts ...giop.ServiceContext) *giop.Request {
	req := &giop.Request{Envelope: giop.Envelope{Version: v, Order: o}, RequestID: id, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte(key)), Operation: op, ServiceContexts: contexts}
	if v != giop.V12 {
		req.Principal = []byte{}
	}
	return req
}

func longLong(t testing.TB, rep *giop.Reply) int64 {
	t.Helper()
	if rep.Status != giop.StatusNoException {
		ex, _ := rep.SystemException()
		t.Fatalf("reply status %v %v", rep.Status, ex)
	}
	d := rep.BodyDecoder()
	v := d.LongLong("result")
	d.Done("result")
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	return v
}

func sysex(t testing.TB, rep *giop.Reply) giop.SystemException {
	t.Helper()
	ex, err := rep.SystemException()
	if err != nil {
		t.Fatalf("reply %v: %v", rep.Status, err)
	}
	return ex
}
