package balancer_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tcpEcho is a replica of a tcp group: it answers each line with its name
// and the line, until the client closes.
func tcpEcho(t *testing.T, name string) string { return tcpReplica(t, name, true) }

// tcpHang is a replica that accepts, reads and never answers.
func tcpHang(t *testing.T) string { return tcpReplica(t, "", false) }

func tcpReplica(t *testing.T, name string, answer bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			go func() {
				defer c.Close()
				if !answer {
					_, _ = io.Copy(io.Discard, c)
					return
				}
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, name+" "+line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A tcp group from the config proxies connections to its replicas round
// robin, each connection in the group's connection table while it is open.
func TestTCPGroupFromConfig(t *testing.T) {
	t.Parallel()
	a, b := tcpEcho(t, "a"), tcpEcho(t, "b")
	e := newEnv(t, envOptions{config: []protocol.Group{{
		Name: "echo", Protocol: protocol.ProtocolTCP, FrontDoor: "127.0.0.1:0", Strategy: "round-robin",
		Source:   protocol.SourceConfig,
		Replicas: []protocol.StaticReplica{{Address: a}, {Address: b}},
	}}})
	st := e.mustGroup("echo")
	if st.Binding != protocol.PerRequest {
		t.Errorf("binding = %q, want per-request", st.Binding)
	}
	seen := map[string]int{}
	for i := range 4 {
		c, err := net.DialTimeout("tcp", st.Listening, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "hello\n"); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		name, rest, _ := strings.Cut(line, " ")
		if rest != "hello\n" {
			t.Fatalf("connection %d answered %q", i, line)
		}
		seen[name]++
		list, err := e.b.Connections("echo", 0, 10)
		if err != nil || list.Total < 1 {
			t.Fatalf("Connections = %+v, %v; want the one open connection", list, err)
		}
		c.Close()
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Errorf("connections per replica = %v, want 2 each (round robin)", seen)
	}
}

// tcpDial connects to a front door, every later I/O bounded.
func tcpDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// tcpAsk writes a line and reads the answer line ("" when the connection
// closed instead).
func tcpAsk(t *testing.T, c net.Conn, line string) string {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return ""
	}
	got, _ := bufio.NewReader(c).ReadString('\n')
	return got
}

// tcpClosed waits until the peer closes c, and fails if it does not.
func tcpClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection was not closed")
	}
}

// tcpGroup is a tcp group spec over replicas at addrs.
func tcpGroup(name string, addrs ...string) protocol.Group {
	gs := protocol.Group{Name: name, Protocol: protocol.ProtocolTCP, FrontDoor: "127.0.0.1:0", Strategy: "round-robin", ReportInterval: ms(20)}
	for _, a := range addrs {
		gs.Replicas = append(gs.Replicas, protocol.StaticReplica{Address: a})
	}
	return gs
}

// A draining replica takes no new connection; its open ones go on until
// tcp.drain_timeout, then are closed.
func TestTCPDrainTimeout(t *testing.T) {
	t.Parallel()
	a, b := tcpEcho(t, "a"), tcpEcho(t, "b")
	gs := tcpGroup("drain", a, b)
	gs.TCP.DrainTimeout = ms(500)
	e := newEnv(t, envOptions{})
	st := e.mustPutGroup(gs)
	c := tcpDial(t, st.Listening)
	first := tcpAsk(t, c, "hi")
	name, _, _ := strings.Cut(first, " ")
	addr := map[string]string{"a": a, "b": b}[name]
	var id string
	for _, r := range e.mustGroup("drain").Replicas {
		if r.Address == addr {
			id = r.ID
		}
	}
	if id == "" {
		t.Fatalf("answered %q: no replica of that name", first)
	}
	drained := time.Now()
	if err := e.b.Drain("drain", id); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		n := tcpDial(t, st.Listening)
		if got := tcpAsk(t, n, "new"); strings.HasPrefix(got, name+" ") || got == "" {
			t.Fatalf("a new connection after the drain answered %q (the draining replica is %s)", got, name)
		}
		n.Close()
	}
	if got := tcpAsk(t, c, "still"); got != name+" still\n" {
		t.Fatalf("the open connection answered %q right after the drain", got)
	}
	tcpClosed(t, c)
	if d := time.Since(drained); d < 500*time.Millisecond {
		t.Errorf("closed %v after the drain, before the 500ms drain timeout", d)
	}
}

// A replica that accepts and hangs: clients get closed connections after
// the idle timeout, passive health ejects it, and the next connections go
// to the others.
func TestTCPHangingReplicaEjected(t *testing.T) {
	t.Parallel()
	good, bad := tcpEcho(t, "good"), tcpHang(t)
	gs := tcpGroup("hang", good, bad)
	gs.Timeouts.Idle = ms(100)
	gs.Health.Passive.ConsecutiveFailures = 2
	e := newEnv(t, envOptions{})
	st := e.mustPutGroup(gs)
	var badID string
	for _, r := range st.Replicas {
		if r.Address == bad {
			badID = r.ID
		}
	}
	closed := 0
	for i := 0; closed < 2; i++ {
		if i > 20 {
			t.Fatal("the hanging replica never got a connection")
		}
		c := tcpDial(t, st.Listening)
		if got := tcpAsk(t, c, "x"); got == "" {
			closed++
		} else if got != "good x\n" {
			t.Fatalf("answered %q", got)
		}
		c.Close()
	}
	eventually(t, 10*time.Second, func() error {
		if ids := e.b.EligibleIDs("hang"); slices.Contains(ids, badID) {
			return fmt.Errorf("eligible %v still holds the hanging replica %s", ids, badID)
		}
		return nil
	})
	for range 4 {
		c := tcpDial(t, st.Listening)
		if got := tcpAsk(t, c, "y"); got != "good y\n" {
			t.Fatalf("after the ejection a connection answered %q", got)
		}
		c.Close()
	}
}

// A flood beyond tcp.max_connections is refused at once while the admitted
// connections go on and the admin API answers.
func TestTCPFloodRefusedAdminResponsive(t *testing.T) {
	t.Parallel()
	gs := tcpGroup("flood", tcpEcho(t, "a"))
	gs.TCP.MaxConnections = 4
	e := newEnv(t, envOptions{admin: true})
	st := e.mustPutGroup(gs)
	var kept []net.Conn
	for range 4 {
		c := tcpDial(t, st.Listening)
		if got := tcpAsk(t, c, "in"); got != "a in\n" {
			t.Fatalf("an admitted connection answered %q", got)
		}
		kept = append(kept, c)
	}
	admin := adminClient(t)
	for i := range 200 {
		c := tcpDial(t, st.Listening)
		if got := tcpAsk(t, c, "flood"); got != "" {
			t.Fatalf("flood connection %d answered %q", i, got)
		}
		c.Close()
		if i%50 == 0 {
			req, _ := http.NewRequest(http.MethodGet, e.adminURL+"/v1/groups/flood", nil)
			resp, err := admin.Do(req)
			if err != nil {
				t.Fatalf("the admin API during the flood: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the admin API answered %d during the flood", resp.StatusCode)
			}
		}
	}
	for _, c := range kept {
		if got := tcpAsk(t, c, "still"); got != "a still\n" {
			t.Fatalf("an admitted connection answered %q after the flood", got)
		}
	}
	if list, err := e.b.Connections("flood", 0, 100); err != nil || list.Total != 4 {
		t.Errorf("Connections = %d open, %v; want the 4 admitted", list.Total, err)
	}
}

// tcp groups are probed actively: by health.send and health.expect when
// set (a replica answering otherwise goes down), else by a TCP connect (a
// replica refusing it goes down).
func TestTCPActiveHealth(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	good, wrong := tcpEcho(t, "good"), tcpEcho(t, "wrong")
	e := newEnv(t, envOptions{})
	check := func(name string, gs protocol.Group, downAddr string) {
		t.Helper()
		gs.Health.Interval, gs.Health.Timeout, gs.Health.Rise, gs.Health.Fall = ms(20), ms(20), 1, 1
		e.mustPutGroup(gs)
		eventually(t, 10*time.Second, func() error {
			for _, r := range e.mustGroup(name).Replicas {
				want := protocol.StateActive
				if r.Address == downAddr {
					want = protocol.StateDown
				}
				if r.State != want {
					return fmt.Errorf("replica %s is %s, want %s", r.Address, r.State, want)
				}
			}
			return nil
		})
	}
	exchange := tcpGroup("exchange", good, wrong)
	exchange.Health.Send, exchange.Health.Expect = "PING\n", "good PING"
	check("exchange", exchange, wrong)
	check("connect", tcpGroup("connect", good, dead), dead)
}

// A group changed to protocol tcp gets a tcp front door; a changed tcp
// block applies to the next connections on the same front door.
func TestTCPReload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	httpReplica := newReplica(t, named("h"))
	e.mustPutGroup(protocol.Group{Name: "switch", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, Strategy: "round-robin",
		Replicas: []protocol.StaticReplica{{Address: httpReplica.URL}}})
	gs := tcpGroup("switch", tcpEcho(t, "t"))
	st := e.mustPutGroup(gs)
	c := tcpDial(t, st.Listening)
	if got := tcpAsk(t, c, "one"); got != "t one\n" {
		t.Fatalf("after the switch to tcp the front door answered %q", got)
	}
	gs.TCP.MaxConnections = 1
	st2 := e.mustPutGroup(gs)
	if st2.Listening != st.Listening {
		t.Errorf("the front door moved from %s to %s on a tcp block change", st.Listening, st2.Listening)
	}
	if got := tcpAsk(t, c, "two"); got != "t two\n" {
		t.Fatalf("the open connection answered %q after the change", got)
	}
	second := tcpDial(t, st.Listening)
	if got := tcpAsk(t, second, "three"); got != "" {
		t.Errorf("a second connection beyond max_connections 1 answered %q", got)
	}
}
