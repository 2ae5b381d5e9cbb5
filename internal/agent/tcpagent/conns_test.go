package tcpagent_test

import (
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/tcpagent"
)

const tableHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

func TestCountEstablished(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		lines []string
		ip    string
		port  uint16
		want  int
		err   string
	}{
		{"empty table", nil, "", 7000, 0, ""},
		{"ipv4: established on the port, listen and time-wait not, other ports not", []string{
			"   0: 0100007F:1B58 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0",
			"   1: 0100007F:1B58 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1",
			"   2: 0100007F:1B58 0100007F:D432 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1",
			"   3: 0100007F:1B58 0100007F:D433 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000",
			"   4: 0100007F:D431 0100007F:1B58 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 20 4 30 10 -1",
			"   5: 0100007F:1B59 0100007F:D434 01 00000000:00000000 00:00000000 00000000     0        0 5 1 0000000000000000 20 4 30 10 -1",
		}, "", 7000, 2, ""},
		{"ipv6", []string{
			"   0: 00000000000000000000000001000000:1B58 00000000000000000000000001000000:E2A4 01 00000000:00000000 00:00000000 00000000     0        0 9 1 0000000000000000 20 4 30 10 -1",
		}, "", 7000, 1, ""},
		{"ipv4 address: another address's socket on the port not counted", []string{
			"   1: 0100007F:1B58 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1",
			"   2: 0200007F:1B58 0100007F:D432 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1",
		}, "127.0.0.1", 7000, 1, ""},
		{"ipv4 address in its mapped ipv6 form", []string{
			"   0: 0000000000000000FFFF00000100007F:1B58 0000000000000000FFFF00000100007F:E2A4 01 00000000:00000000 00:00000000 00000000     0        0 9 1 0000000000000000 20 4 30 10 -1",
		}, "127.0.0.1", 7000, 1, ""},
		{"ipv6 address", []string{
			"   0: 00000000000000000000000001000000:1B58 00000000000000000000000001000000:E2A4 01 00000000:00000000 00:00000000 00000000     0        0 9 1 0000000000000000 20 4 30 10 -1",
		}, "::1", 7000, 1, ""},
		{"address not hex", []string{"   0: 0100007G:1B58 0100007F:D431 01 x"}, "127.0.0.1", 7000, 0, "line 2: local address \"0100007G\""},
		{"blank line", []string{""}, "", 7000, 0, ""},
		{"too few fields", []string{"   0: 0100007F:1B58 00000000:0000"}, "", 7000, 0, "line 2: 3 fields"},
		{"no port", []string{"   0: 0100007F 00000000:0000 01 x"}, "", 7000, 0, "line 2: local address"},
		{"port not hex", []string{"   0: 0100007F:XYZW 00000000:0000 01 x"}, "", 7000, 0, "line 2: local port \"XYZW\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table := tableHeader + strings.Join(tc.lines, "\n")
			var ip netip.Addr
			if tc.ip != "" {
				ip = netip.MustParseAddr(tc.ip)
			}
			n, err := tcpagent.CountEstablished(strings.NewReader(table), ip, tc.port)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("CountEstablished = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
}

// listener is a real replica: it accepts connections and hands each to
// the test.
func listener(t *testing.T, network, addr string) (net.Listener, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
		}
	}()
	return ln, conns
}

// dial connects n clients to ln and waits until ln has accepted each, so
// that the replica's side of each is ESTABLISHED. It returns the client
// and server sides.
func dial(t *testing.T, ln net.Listener, accepted <-chan net.Conn, n int) (clients, servers []net.Conn) {
	t.Helper()
	for range n {
		c, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
		select {
		case s := <-accepted:
			t.Cleanup(func() { s.Close() })
			servers = append(servers, s)
		case <-time.After(5 * time.Second):
			t.Fatal("the listener accepted no connection within 5s")
		}
	}
	return clients, servers
}

func portOf(ln net.Listener) uint16 { return uint16(ln.Addr().(*net.TCPAddr).Port) }

// closeClient closes a client's side and waits until the replica's side
// has read the end of the stream: it is then in CLOSE_WAIT, no longer
// ESTABLISHED.
func closeClient(t *testing.T, client, server net.Conn) {
	t.Helper()
	client.Close()
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, server); err != nil {
		t.Fatalf("the replica did not see the client close: %v", err)
	}
}

// TestConnectionsCountsRealSockets counts this process's real
// connections, IPv4 and IPv6, in its own /proc/PID/net tables: the
// replica's side of each open client connection, not the clients' own
// sockets, and no longer one its client closed.
func TestConnectionsCountsRealSockets(t *testing.T) {
	t.Parallel()
	ln4, acc4 := listener(t, "tcp4", "127.0.0.1:0")
	clients, servers := dial(t, ln4, acc4, 3)
	c := tcpagent.Connections{Dir: tcpagent.PidNet("", os.Getpid()), Port: portOf(ln4)}
	if n, err := c.Count(); err != nil || n != 3 {
		t.Fatalf("Count = %d, %v; want 3", n, err)
	}
	closeClient(t, clients[0], servers[0])
	if n, err := c.Count(); err != nil || n != 2 {
		t.Fatalf("after a client closed: Count = %d, %v; want 2", n, err)
	}

	ln6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		// Containers often have no ::1; TestCountEstablished parses a
		// tcp6 table in any case.
		t.Logf("no IPv6 loopback (%v): the real tcp6 table is not read", err)
		return
	}
	ln6.Close()
	ln6b, acc6 := listener(t, "tcp6", "[::1]:0")
	dial(t, ln6b, acc6, 2)
	c6 := tcpagent.Connections{Dir: tcpagent.PidNet("", os.Getpid()), Port: portOf(ln6b)}
	if n, err := c6.Count(); err != nil || n != 2 {
		t.Fatalf("IPv6: Count = %d, %v; want 2", n, err)
	}
}

// TestNetDirs: a process that does not exist, and a cgroup without a
// process or without cgroup.procs, are errors that say so; a cgroup's
// first process gives its namespace.
func TestNetDirs(t *testing.T) {
	t.Parallel()
	if _, err := tcpagent.PidNet("", 1<<30)(); err == nil || !strings.Contains(err.Error(), "process 1073741824") {
		t.Errorf("a missing process: %v", err)
	}
	dir := t.TempDir()
	if _, err := tcpagent.CgroupNet("", dir)(); err == nil || !strings.Contains(err.Error(), "cgroup.procs") {
		t.Errorf("no cgroup.procs: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tcpagent.CgroupNet("", dir)(); err == nil || !strings.Contains(err.Error(), "has no process") {
		t.Errorf("an empty cgroup: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strings.Repeat(" ", 3)+strconv.Itoa(os.Getpid())+"\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := tcpagent.CgroupNet("", dir)()
	if want := filepath.Join("/proc", strconv.Itoa(os.Getpid()), "net"); err != nil || got != want {
		t.Errorf("CgroupNet = %q, %v; want %q", got, err, want)
	}
}
