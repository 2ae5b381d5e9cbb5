package giopagent_test

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// BenchmarkCall measures one closed-loop is_prime call on one connection,
// straight to the test servant, through a bare byte-copying TCP proxy (the
// cost of any extra hop), and through the agent (with no monitor, and with
// a monitor measuring every call), so that the agent's own cost per call is
// the difference. Run it alone, under the bench lock:
//
//	flock /tmp/fulcrum-bench.lock go test -run '^$' -bench Call -benchtime 20000x ./internal/agent/giopagent/
func BenchmarkCall(b *testing.B) {
	for _, via := range []string{"direct", "copy-proxy", "agent", "agent+monitor"} {
		b.Run(via, func(b *testing.B) {
			s := startServant(b)
			addr := s.ln.Addr().String()
			switch via {
			case "copy-proxy":
				addr = startCopyProxy(b, addr)
			case "agent", "agent+monitor":
				opts := giopagent.Options{Target: s.ref, Logger: quiet}
				if via == "agent+monitor" {
					// A monitor that reports on pulls and needs no balancer.
					mon, err := monitor.New(monitor.Options{Token: "bench", Mode: protocol.MonitorPull, Logger: quiet})
					if err != nil {
						b.Fatal(err)
					}
					opts.Monitor = mon
				}
				a, err := giopagent.New(opts)
				if err != nil {
					b.Fatal(err)
				}
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				go a.Serve(ln)
				b.Cleanup(func() { a.Close() })
				addr = ln.Addr().String()
			}
			benchCalls(b, addr)
		})
	}
}

func benchCalls(b *testing.B, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := &giop.Request{
		Envelope: giop.Envelope{Version: giop.V12, Order: cdr.LittleEndian}, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget(servantKey), Operation: giop.OpIsPrime,
	}
	req.SetLongArg(7919)
	buf := make([]byte, 0, 256)
	b.ResetTimer()
	for i := range b.N {
		req.RequestID = uint32(i)
		out, err := giop.AppendMessage(buf[:0], req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(out); err != nil {
			b.Fatal(err)
		}
		rep, err := readWhole(c)
		if err != nil {
			b.Fatal(err)
		}
		if len(rep) < giop.HeaderSize+8 {
			b.Fatal("short reply " + strconv.Itoa(len(rep)))
		}
	}
}

// startCopyProxy runs a TCP proxy to target that copies bytes both ways
// with io.Copy and looks at nothing, and returns its address.
func startCopyProxy(b *testing.B, target string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			go io.Copy(u, c)
			go io.Copy(c, u)
		}
	}()
	return ln.Addr().String()
}
