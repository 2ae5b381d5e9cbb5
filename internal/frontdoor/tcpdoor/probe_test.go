package tcpdoor_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
)

// Probe passes on a connect alone, or when the answer to send contains
// expect; it fails on a refused connect, a wrong answer within the
// timeout, or a replica that closes first.
func TestProbe(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	silent := newServer(t, hang)
	closer := newServer(t, func(c net.Conn) { c.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name, addr, send, expect string
		ok                       bool
		errHas                   string
	}{
		{"connect", r.addr(), "", "", true, ""},
		{"send and expect", r.addr(), "PING\n", "r0 PING", true, ""},
		{"expect without send", closer.addr(), "", "banner", false, "not seen"},
		{"wrong answer", r.addr(), "PING\n", "PONG", false, "not seen before the timeout"},
		{"silent", silent.addr(), "PING\n", "PONG", false, "not seen before the timeout"},
		{"refused", dead, "", "", false, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := tcpdoor.Probe(ctx, nil, tc.addr, tc.send, tc.expect)
			if tc.ok != (err == nil) || (!tc.ok && !strings.Contains(err.Error(), tc.errHas)) {
				t.Errorf("Probe = %v, want ok %v (error with %q)", err, tc.ok, tc.errHas)
			}
		})
	}
}
