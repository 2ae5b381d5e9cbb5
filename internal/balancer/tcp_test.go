package balancer_test

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tcpEcho is a replica of a tcp group: it answers each line with its name
// and the line, until the client closes.
func tcpEcho(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
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
