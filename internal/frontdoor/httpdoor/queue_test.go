package httpdoor

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// gate lets the test release a replica's calls one at a time and see
// which call entered.
type gate struct {
	entered chan string
	pass    chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan string, 16), pass: make(chan struct{})} }

func (g *gate) handler(w http.ResponseWriter, r *http.Request) {
	g.entered <- r.URL.Path
	<-g.pass
	_, _ = io.WriteString(w, "done "+r.URL.Path)
}

// queueFrontDoor starts a front door on engine for a group of one gated replica
// with max_inflight 1 and queue q.
func queueFrontDoor(t *testing.T, engine string, q protocol.Queue) (*gate, *testGroup, *frontDoor) {
	t.Helper()
	gt := newGate()
	r1 := startReplica(t, "r1", "", gt.handler)
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{r1.spec()}, maxInflight: 1, queue: q})
	return gt, g, startFrontDoor(t, g, Options{Engine: engine})
}

// holdReplica sends /held through c and waits until the replica runs it;
// the returned channel is closed when its answer is read.
func holdReplica(t *testing.T, c *http.Client, fd *frontDoor, gt *gate) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := c.Get(fd.url + "/held"); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	if p := recv(t, gt.entered, "the held call"); p != "/held" {
		t.Fatalf("first call at the replica is %s", p)
	}
	return done
}

// waitQueued waits until the group's queue holds n calls.
func waitQueued(t *testing.T, g *testGroup, n int) {
	t.Helper()
	waitQueue(t, g, func(st protocol.QueueStats) bool { return st.Waiting == n },
		fmt.Sprintf("the queue to hold %d calls", n))
}

// waitQueue waits, on the queue's change notifications, until its stats
// satisfy ok.
func waitQueue(t *testing.T, g *testGroup, ok func(protocol.QueueStats) bool, what string) {
	t.Helper()
	ctx := boundedCtx(t)
	for {
		changed := g.queue.Changed()
		st := g.queue.Stats()
		if ok(st) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: queue stats %+v", what, st)
		}
	}
}

// With a queue, calls beyond max_inflight wait and are served in cost
// order instead of being answered 503; over HTTP/1.1 (lean path) and h2c
// (net/http path).
func testProxyQueueServesWaitingCallsByCost(t *testing.T, engine string) {
	t.Parallel()
	for _, proto := range []string{"http1", "h2c"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			gt, g, fd := queueFrontDoor(t, engine, protocol.Queue{Limit: 8, Timeout: protocol.Duration(waitBound), Order: protocol.QueueCost})
			c := h1Client(t)
			if proto == "h2c" {
				c = h2cClient(t)
			}
			results := make(chan string, 4)
			call := func(path, cost string) {
				req, _ := http.NewRequest("GET", fd.url+path, nil)
				req.Header.Set(protocol.HeaderCost, cost)
				res, err := c.Do(req)
				if err != nil {
					results <- err.Error()
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				results <- fmt.Sprintf("%d %s", res.StatusCode, b)
			}
			go call("/first", "9")
			if p := recv(t, gt.entered, "the first call"); p != "/first" {
				t.Fatalf("first call at the replica is %s", p)
			}
			go call("/costly", "5")
			waitQueued(t, g, 1)
			go call("/cheap", "1")
			waitQueued(t, g, 2)
			for _, want := range []string{"/cheap", "/costly"} {
				gt.pass <- struct{}{}
				if p := recv(t, gt.entered, want); p != want {
					t.Fatalf("next at the replica %s, want %s", p, want)
				}
			}
			gt.pass <- struct{}{}
			for range 3 {
				if r := recv(t, results, "an answer"); !strings.HasPrefix(r, "200 done ") {
					t.Fatalf("answer %q, want 200", r)
				}
			}
			if st := g.queue.Stats(); st.Served != 2 || st.Waiting != 0 {
				t.Fatalf("queue stats %+v, want 2 served", st)
			}
			checkIdle(t, g)
		})
	}
}

// A call that waits out queue.timeout, or finds the queue full, gets 503
// overloaded saying why.
func testProxyQueueTimeoutAndFull(t *testing.T, engine string) {
	t.Parallel()
	gt, g, fd := queueFrontDoor(t, engine, protocol.Queue{Limit: 1, Timeout: protocol.Duration(30 * time.Millisecond), Order: protocol.QueueFIFO})
	c := h1Client(t)
	done := holdReplica(t, c, fd, gt)

	res, b := do(t, c, "GET", fd.url+"/late", "")
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after the queue timeout: status %d, want 503", res.StatusCode)
	}
	if e := decodeError(t, res, b); e.Code != CodeOverloaded || !strings.Contains(e.Reason, "queue.timeout") {
		t.Fatalf("after the queue timeout: %+v, want overloaded naming queue.timeout", e)
	}

	g.queue.Configure(protocol.Queue{Limit: 1, Timeout: protocol.Duration(waitBound), Order: protocol.QueueFIFO})
	waiting := make(chan int, 1)
	go func() {
		res, err := c.Get(fd.url + "/waiting")
		if err != nil {
			waiting <- 0
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		waiting <- res.StatusCode
	}()
	waitQueued(t, g, 1)
	res, b = do(t, c, "GET", fd.url+"/refused", "")
	if e := decodeError(t, res, b); res.StatusCode != http.StatusServiceUnavailable || e.Code != CodeOverloaded || !strings.Contains(e.Reason, "limit of 1") {
		t.Fatalf("queue full: %d %+v, want 503 overloaded naming the limit", res.StatusCode, e)
	}
	gt.pass <- struct{}{}
	recv(t, done, "the held call's answer")
	if p := recv(t, gt.entered, "the waiting call"); p != "/waiting" {
		t.Fatalf("next at the replica %s, want /waiting", p)
	}
	gt.pass <- struct{}{}
	if code := recv(t, waiting, "the waiting call's answer"); code != http.StatusOK {
		t.Fatalf("waiting call: status %d, want 200", code)
	}
	if st := g.queue.Stats(); st.TimedOut != 1 || st.Full != 1 || st.Served != 1 {
		t.Fatalf("queue stats %+v, want 1 timed out, 1 full, 1 served", st)
	}
	checkIdle(t, g)
}

// A client that hangs up while its call waits in the queue (lean path,
// no reader goroutine) leaves the queue, and its call never reaches the
// replica.
func testProxyQueueClientHangsUp(t *testing.T, engine string) {
	t.Parallel()
	gt, g, fd := queueFrontDoor(t, engine, protocol.Queue{Limit: 4, Timeout: protocol.Duration(waitBound), Order: protocol.QueueFIFO})
	c := h1Client(t)
	done := holdReplica(t, c, fd, gt)

	nc, err := net.Dial("tcp", strings.TrimPrefix(fd.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(nc, "GET /abandoned HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, g, 1)
	nc.Close()
	waitQueue(t, g, func(st protocol.QueueStats) bool { return st.TimedOut == 1 }, "the abandoned call to leave the queue")
	gt.pass <- struct{}{}
	recv(t, done, "the held call's answer")
	select {
	case p := <-gt.entered:
		t.Fatalf("the replica got %s after its client hung up", p)
	default:
	}
	checkIdle(t, g)
}
