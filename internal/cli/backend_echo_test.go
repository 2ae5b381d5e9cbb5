package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// "fulcrum backend echo" says where it listens, echoes, and exits 0 when
// stopped.
func TestBackendEchoServesAndStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- runEcho(runCtx, "127.0.0.1:0", pw); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q, want listening on HOST:PORT", line)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(nc, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo answered %q, %v; want ping", got, err)
	}
	nc.Close()
	stop()
	if err := <-done; err != nil {
		t.Errorf("runEcho after stop = %v, want nil", err)
	}
}

// A --listen that is not host:port is a usage error naming the flag.
func TestBackendEchoBadListen(t *testing.T) {
	t.Parallel()
	err := runEcho(context.Background(), "7001", io.Discard)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), `--listen: invalid value "7001"`) {
		t.Fatalf("runEcho(7001) = %v, want exit 2 naming --listen", err)
	}
}
