package tcpagent_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent"
	"github.com/fulcrum-lb/fulcrum/internal/agent/tcpagent"
	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixedCPU is a CPU source the test moves by hand.
type fixedCPU struct{ used *time.Duration }

func (f fixedCPU) Usage() (time.Duration, error) { return *f.used, nil }
func (fixedCPU) String() string                  { return "test" }

// TestMetrics: the agent's window metrics are the replica's CPU share
// (the HTTP agent's computation) and its open client connections, counted
// in the real tables of this process.
func TestMetrics(t *testing.T) {
	t.Parallel()
	ln, acc := listener(t, "tcp4", "127.0.0.1:0")
	clients, servers := dial(t, ln, acc, 4)
	clk := clocktest.New(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	used := time.Duration(0)
	a, err := tcpagent.New(tcpagent.Config{
		Target: ln.Addr().String(), Net: tcpagent.PidNet("", os.Getpid()),
		CPU: fixedCPU{&used}, Cores: 2, Logger: quiet, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	used = 500 * time.Millisecond // a quarter of 2 cores over 1 s
	if err := a.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := a.Metrics(clk.Now())
	if m[protocol.MetricInflight] != 4 || m[protocol.MetricCPU] != 0.25 || m[protocol.MetricUtilization] != 0.25 {
		t.Errorf("metrics %v, want inflight 4, cpu and utilization 0.25", m)
	}
	closeClient(t, clients[1], servers[1])
	if m := a.Metrics(clk.Now()); m[protocol.MetricInflight] != 3 {
		t.Errorf("after a client closed: metrics %v, want inflight 3", m)
	}
}

// TestMetricsWithoutNamespace: when the connections cannot be counted
// (the replica's process is gone), inflight is left out and the CPU
// metrics stay.
func TestMetricsWithoutNamespace(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	used := time.Duration(0)
	gone := errors.New("gone")
	a, err := tcpagent.New(tcpagent.Config{
		Target: "127.0.0.1:7000", Net: func() (string, error) { return "", gone },
		CPU: fixedCPU{&used}, Cores: 1, Logger: quiet, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Ready(context.Background()); !errors.Is(err, gone) {
		t.Errorf("Ready: %v, want the namespace's error", err)
	}
	clk.Advance(time.Second)
	used = 100 * time.Millisecond
	if err := a.Ready(context.Background()); !errors.Is(err, gone) {
		t.Errorf("Ready: %v", err)
	}
	m := a.Metrics(clk.Now())
	if _, ok := m[protocol.MetricInflight]; ok || m[protocol.MetricCPU] != 0.1 {
		t.Errorf("metrics %v, want cpu 0.1 and no inflight", m)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	net := tcpagent.PidNet("", os.Getpid())
	for _, tc := range []struct {
		name string
		cfg  tcpagent.Config
		want string
	}{
		{"no target", tcpagent.Config{Net: net}, `target: invalid value "", must be HOST:PORT`},
		{"a URL", tcpagent.Config{Target: "http://10.0.0.1:80", Net: net}, "must be HOST:PORT"},
		{"port 0", tcpagent.Config{Target: "10.0.0.1:0", Net: net}, "port in [1, 65535]"},
		{"port too big", tcpagent.Config{Target: "10.0.0.1:65536", Net: net}, "port in [1, 65535]"},
		{"no namespace", tcpagent.Config{Target: "10.0.0.1:80"}, "give a process or a cgroup"},
		{"pool without cpu", tcpagent.Config{Target: "10.0.0.1:80", Net: net, Pool: httpagent.ProcCPU{Pids: []int{1}}}, "pool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tcpagent.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
