package httpagent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fakeCPU is a CPUSource a test sets.
type fakeCPU struct {
	used time.Duration
	err  error
}

func (f *fakeCPU) Usage() (time.Duration, error) { return f.used, f.err }
func (f *fakeCPU) String() string                { return "fake" }

// An agent with a pool reports the pool's CPU time beyond the replica's
// as cpu_other; a pool that fails to read leaves it out of that window
// and the agent goes on.
func TestAgentReportsOtherWorkFromItsPool(t *testing.T) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	cpu, pool := &fakeCPU{used: time.Second}, &fakeCPU{used: 3 * time.Second}
	a, err := New(Config{CPU: cpu, Pool: pool, Cores: 0.25, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	a.Metrics(now) // opens the window
	// One second: the replica used 0.1 s of its quarter core, everything
	// in the cgroup 0.2 s.
	now = now.Add(time.Second)
	cpu.used += 100 * time.Millisecond
	pool.used += 200 * time.Millisecond
	a.Sample(ctx)
	m := a.Metrics(now)
	if math.Abs(m[protocol.MetricCPU]-0.4) > 1e-9 || math.Abs(m[protocol.MetricCPUOther]-0.4) > 1e-9 {
		t.Fatalf("metrics %v, want cpu 0.4 and cpu_other 0.4", m)
	}
	now = now.Add(time.Second)
	cpu.used += 50 * time.Millisecond
	pool.err = errors.New("gone")
	a.Sample(ctx)
	m = a.Metrics(now)
	if _, ok := m[protocol.MetricCPUOther]; ok || math.Abs(m[protocol.MetricCPU]-0.2) > 1e-9 {
		t.Fatalf("pool unreadable: metrics %v, want cpu 0.2 and no cpu_other", m)
	}
}

func TestNewPoolNeedsCPU(t *testing.T) {
	_, err := New(Config{StubStatus: "http://127.0.0.1:1/s", Pool: &fakeCPU{}})
	if err == nil || !strings.Contains(err.Error(), "needs the replica's own CPU source") {
		t.Fatalf("New with a pool and no CPU source: %v", err)
	}
}
