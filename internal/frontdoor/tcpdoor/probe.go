package tcpdoor

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"time"
)

// maxProbeRead bounds what Probe reads while it looks for expect.
const maxProbeRead = 64 << 10

// Probe is a tcp replica's active health check: a TCP connect to addr
// and, when send or expect is set, send written on the connection and the
// replica's bytes read until expect appears among them (the first 64 KiB).
// ctx bounds the whole check (the balancer gives it health.timeout); dial
// opens the connection (a net.Dialer's when nil). It returns nil when the
// replica passed, else an error saying what happened.
func Probe(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr, send, expect string) error {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	if send == "" && expect == "" {
		return nil
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	if send != "" {
		if _, err := nc.Write([]byte(send)); err != nil {
			return fmt.Errorf("tcpdoor: probe send: %w", err)
		}
	}
	if expect == "" {
		return nil
	}
	want := []byte(expect)
	var got []byte
	buf := make([]byte, 4096)
	for len(got) < maxProbeRead {
		n, err := nc.Read(buf)
		got = append(got, buf[:n]...)
		if bytes.Contains(got, want) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil || isTimeout(err) {
				return fmt.Errorf("tcpdoor: probe: %q not seen before the timeout (%w)", expect, err)
			}
			return fmt.Errorf("tcpdoor: probe: %q not seen (%w)", expect, err)
		}
	}
	return fmt.Errorf("tcpdoor: probe: %q not seen in the first %d bytes", expect, maxProbeRead)
}
