package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// connQueue is a net.Listener fed by a dispatcher: it stands in for the
// kernel handing the connections of one shared listening socket to one
// worker process or another.
type connQueue struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, conns: make(chan net.Conn, 4), done: make(chan struct{})}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error   { q.once.Do(func() { close(q.done) }); return nil }
func (q *connQueue) Addr() net.Addr { return q.addr }

// workerOwning returns a client id that protocol.WorkerOf gives worker
// index of count.
func workerOwning(t *testing.T, index, count int) string {
	t.Helper()
	for i := range 100 {
		if id := fmt.Sprintf("c%d", i); protocol.WorkerOf(id, count) == index {
			return id
		}
	}
	t.Fatalf("no client id of worker %d/%d", index, count)
	return ""
}

// TestWorkerClosesTheConnectionOfAClientItDoesNotOwn: two worker monitors
// of one replica serve ONE real listening socket (a dispatcher gives its
// first connection to the worker that does not own the client, later
// ones to the owner). A keep-alive client named in a high advisory calls
// through that socket: its first call runs on the other worker and is
// answered with Connection: close, so its next call comes on a new
// connection, reaches its owner and is sent back (307, Fulcrum-Rebind: 1).
// A client not named keeps its connection; the other worker closes a
// named client's connection once per advisory.
func TestWorkerClosesTheConnectionOfAClientItDoesNotOwn(t *testing.T) {
	t.Parallel()
	owner := 1
	named := workerOwning(t, owner, 2)
	adv := protocol.Advisory{Advisory: protocol.High, Shed: 1, Epoch: 7, Clients: []string{named}}
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(adv)
	}))
	defer admin.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	queues := [2]*connQueue{newConnQueue(ln.Addr()), newConnQueue(ln.Addr())}
	var servers [2]*http.Server
	var mons [2]*monitor.Monitor
	var served sync.WaitGroup
	for i := range 2 {
		m, err := monitor.New(monitor.Options{
			Admin: admin.URL, Token: "frt_w", Group: "g", Address: base, FrontDoor: "http://127.0.0.1:2",
			Worker: &protocol.Worker{Index: i, Count: 2}, Logger: discardLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := m.ReportNow(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		mons[i] = m
		idx := i
		servers[i] = &http.Server{Handler: m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "worker %d", idx)
		}))}
		served.Add(1)
		go func() {
			defer served.Done()
			_ = servers[idx].Serve(queues[idx])
		}()
	}
	// The "kernel": the first connection to the worker that does not own
	// the named client, every later one to its owner.
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			to := owner
			if n == 0 {
				to = 1 - owner
			}
			queues[to].conns <- c
		}
	}()
	defer func() {
		ln.Close()
		<-dispatched
		for _, s := range servers {
			_ = s.Close()
		}
		served.Wait()
		for _, m := range mons {
			_ = m.Close(context.Background())
		}
	}()

	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	type answer struct {
		status int
		body   string
		close  bool
		reused bool
		rebind string
	}
	call := func(id string) answer {
		t.Helper()
		var reused bool
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/work", nil)
		req.Header.Set(protocol.HeaderBinding, "g/r-1")
		req.Header.Set(protocol.HeaderClient, id)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), resp.Close, reused, resp.Header.Get(protocol.HeaderRebind)}
	}

	other := fmt.Sprintf("worker %d", 1-owner)
	if a := call("not-named"); a.status != 200 || a.body != other || a.close || a.reused {
		t.Fatalf("first call of a client not named: %+v, want it run by %s on a new connection, kept open", a, other)
	}
	if a := call(named); a.status != 200 || a.body != other || !a.close || !a.reused {
		t.Fatalf("named client on the same connection: %+v, want it run by %s and answered Connection: close", a, other)
	}
	if a := call(named); a.status != http.StatusTemporaryRedirect || a.rebind != "1" || a.reused {
		t.Fatalf("named client's next call: %+v, want a new connection, reaching its owner (worker %d), and a 307 with Fulcrum-Rebind: 1", a, owner)
	}
	if a := call(named); a.status != 200 || a.body != fmt.Sprintf("worker %d", owner) || a.close {
		t.Fatalf("named client after its send-back: %+v, want it run by its owner, connection kept", a)
	}

	// Once per advisory per worker: the other worker closes a named
	// client's connection on its first call only.
	h := mons[1-owner].Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/work", nil)
	req.Header.Set(protocol.HeaderBinding, "g/r-1")
	req.Header.Set(protocol.HeaderClient, named)
	h.ServeHTTP(rec, req)
	if c := rec.Header().Get("Connection"); rec.Code != 200 || c != "" {
		t.Fatalf("second call of the named client on worker %d: %d, Connection %q, want 200 and no Connection: close (once per advisory)", 1-owner, rec.Code, c)
	}
}
