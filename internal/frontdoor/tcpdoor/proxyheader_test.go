package tcpdoor_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
	proxyproto "github.com/pires/go-proxyproto"
)

// proxyAware is a replica behind a front door that sends PROXY headers:
// it reads the header, answers "vN from SRC to DST", then echoes lines.
func proxyAware(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	h, err := proxyproto.Read(r)
	if err != nil {
		fmt.Fprintf(c, "no header: %v\n", err)
		return
	}
	fmt.Fprintf(c, "v%d from %s to %s\n", h.Version, h.SourceAddr, h.DestinationAddr)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := io.WriteString(c, "r0 "+line); err != nil {
			return
		}
	}
}

// header is a PROXY header of version v from src to dst.
func header(t *testing.T, v byte, src, dst string) []byte {
	t.Helper()
	s, _ := net.ResolveTCPAddr("tcp", src)
	d, _ := net.ResolveTCPAddr("tcp", dst)
	var buf bytes.Buffer
	if _, err := proxyproto.HeaderProxyFromAddrs(v, s, d).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A trusted peer's PROXY header (v1 or v2) names the client: the
// connection table shows it, and the header sent on to the replica (v1 or
// v2) carries it. The client's first data, sent with the header in one
// write, arrives after it.
func TestProxyProtocolInAndOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, out byte }{{1, 1}, {1, 2}, {2, 1}, {2, 2}} {
		t.Run(fmt.Sprintf("in v%d out v%d", tc.in, tc.out), func(t *testing.T) {
			t.Parallel()
			r := newServer(t, proxyAware)
			g := newGroup(t, []string{r.addr()}, groupOptions{tcp: protocol.TCP{ProxyProtocol: protocol.ProxyProtocol{
				Trusted: []string{"10.0.0.0/8", "127.0.0.1"}, Send: fmt.Sprintf("v%d", tc.out)}}})
			d := startDoor(t, g, tcpdoor.Options{})
			c := dial(t, d.addr)
			first := append(header(t, tc.in, "203.0.113.7:5555", "192.0.2.1:80"), "early\n"...)
			if _, err := c.Write(first); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			hello, _ := br.ReadString('\n')
			want := fmt.Sprintf("v%d from 203.0.113.7:5555 to 192.0.2.1:80\n", tc.out)
			if hello != want {
				t.Fatalf("the replica saw %q, want %q", hello, want)
			}
			if got, _ := br.ReadString('\n'); got != "r0 early\n" {
				t.Fatalf("the data after the header came back as %q", got)
			}
			list := g.Snapshot().Conns.List(0, 10, timeNow())
			if list.Total != 1 || list.Connections[0].Client != "203.0.113.7:5555" || list.Connections[0].BytesIn != uint64(len("early\n")) {
				t.Errorf("connection table = %+v, want client 203.0.113.7:5555 and the 6 bytes after the header", list.Connections)
			}
		})
	}
}

// While some peers are trusted, an untrusted peer's connection that
// begins with a PROXY header (v1 or v2) is closed and counted: it never
// reaches the replica as data. Without a trusted list, PROXY headers are
// not fulcrum's business: one passes to the replica as data, and the
// connection table shows the real peer.
func TestUntrustedProxyHeader(t *testing.T) {
	t.Parallel()
	for _, v := range []byte{1, 2} {
		t.Run(fmt.Sprintf("v%d refused", v), func(t *testing.T) {
			t.Parallel()
			r := newServer(t, echo("r0"))
			g := newGroup(t, []string{r.addr()}, groupOptions{tcp: protocol.TCP{ProxyProtocol: protocol.ProxyProtocol{Trusted: []string{"10.0.0.0/8"}}}})
			d := startDoor(t, g, tcpdoor.Options{})
			c := dial(t, d.addr)
			if _, err := c.Write(append(header(t, v, "203.0.113.7:5555", "192.0.2.1:80"), "hello\n"...)); err != nil {
				t.Fatal(err)
			}
			if got := readEOF(t, c); got != "" {
				t.Fatalf("the replica answered %q", got)
			}
			eventually(t, "one proxy_header refusal", func() bool {
				return g.Snapshot().Conns.Refusals()[conntable.RefuseProxyHeader] == 1
			})
		})
	}
	t.Run("data mentioning PROXY later passes", func(t *testing.T) {
		t.Parallel()
		r := newServer(t, echo("r0"))
		g := newGroup(t, []string{r.addr()}, groupOptions{tcp: protocol.TCP{ProxyProtocol: protocol.ProxyProtocol{Trusted: []string{"10.0.0.0/8"}}}})
		d := startDoor(t, g, tcpdoor.Options{})
		c := dial(t, d.addr)
		if _, err := io.WriteString(c, "say PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"); err != nil {
			t.Fatal(err)
		}
		got, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || got != "r0 say PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n" {
			t.Fatalf("answered %q, %v", got, err)
		}
	})
	t.Run("no trusted list: passes as data", func(t *testing.T) {
		t.Parallel()
		r := newServer(t, echo("r0"))
		g := newGroup(t, []string{r.addr()}, groupOptions{})
		d := startDoor(t, g, tcpdoor.Options{})
		c := dial(t, d.addr)
		if _, err := c.Write(header(t, 1, "203.0.113.7:5555", "192.0.2.1:80")); err != nil {
			t.Fatal(err)
		}
		got, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || got != "r0 PROXY TCP4 203.0.113.7 192.0.2.1 5555 80\r\n" {
			t.Fatalf("answered %q, %v; want the header echoed as data", got, err)
		}
		if list := g.Snapshot().Conns.List(0, 10, timeNow()); list.Total != 1 || list.Connections[0].Client != c.LocalAddr().String() {
			t.Errorf("connection table = %+v, want the real peer %s", list.Connections, c.LocalAddr())
		}
	})
}

// A trusted peer's connection with a malformed header, or none, is closed
// and counted, and never reaches a replica.
func TestMalformedProxyHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, first string }{
		{"garbage v1", "PROXY TCP4 not-an-address 192.0.2.1 1 2\r\n"},
		{"unknown family", "PROXY TCP9 1.2.3.4 5.6.7.8 1 2\r\n"},
		{"missing", "hello\n"},
		{"bad v2", "\r\n\r\n\x00\r\nQUIT\n\x99\x11\x00\x0c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newServer(t, echo("r0"))
			g := newGroup(t, []string{r.addr()}, groupOptions{tcp: protocol.TCP{ProxyProtocol: protocol.ProxyProtocol{Trusted: []string{"127.0.0.0/8"}}}})
			d := startDoor(t, g, tcpdoor.Options{})
			c := dial(t, d.addr)
			if _, err := io.WriteString(c, tc.first+strings.Repeat("x", 200)); err != nil {
				t.Fatal(err)
			}
			if got := readEOF(t, c); got != "" {
				t.Fatalf("got %q", got)
			}
			if n := g.Snapshot().Conns.Refusals()[conntable.RefuseProxyHeader]; n != 1 {
				t.Errorf("refused for proxy_header = %d, want 1", n)
			}
			select {
			case <-r.accepted:
				t.Error("the replica was connected to")
			default:
			}
		})
	}
}

// ParseTrusted takes CIDRs and single addresses and names what it cannot
// parse.
func TestParseTrusted(t *testing.T) {
	t.Parallel()
	got, err := tcpdoor.ParseTrusted([]string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1"})
	if err != nil || len(got) != 4 || got[1].Bits() != 32 || got[3].Bits() != 128 {
		t.Fatalf("ParseTrusted = %v, %v", got, err)
	}
	if _, err := tcpdoor.ParseTrusted([]string{"10.0.0.0/8", "lb.example"}); err == nil || !strings.Contains(err.Error(), `"lb.example"`) {
		t.Errorf("ParseTrusted(lb.example) = %v, want an error naming it", err)
	}
}
