package monitor

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The cpu share is CPU time over the window's length times the cores the
// process may use: a replica held to a quarter of a core and using all of
// it reports 1, not a quarter.
func TestCPUMeterSharesOfItsCores(t *testing.T) {
	t.Parallel()
	var used time.Duration
	start := time.Unix(1000, 0)
	m := &cpuMeter{read: func() (time.Duration, bool) { return used, true }, cores: func() float64 { return 0.25 }, lastWall: start, ok: true}
	for _, tc := range []struct {
		cpu  time.Duration // used over the next 100 ms
		want float64
	}{
		{25 * time.Millisecond, 1},
		{12500 * time.Microsecond, 0.5},
		{0, 0},
		{40 * time.Millisecond, 1}, // over the quota (accounting skew): capped
	} {
		used += tc.cpu
		start = start.Add(100 * time.Millisecond)
		if got, ok := m.sample(start); !ok || got != tc.want {
			t.Errorf("%v of CPU in 100 ms on 0.25 cores: share %v, %v; want %v", tc.cpu, got, ok, tc.want)
		}
	}
}

func TestSelfCoresTakesTheCgroupLimitBelowGOMAXPROCS(t *testing.T) {
	t.Parallel()
	procs := float64(runtime.GOMAXPROCS(0))
	dir := t.TempDir()
	limited := filepath.Join(dir, "limited")
	loose := filepath.Join(dir, "loose")
	for d, max := range map[string]string{limited: "50000 100000", loose: "6400000 100000"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cpu.max"), []byte(max+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := selfCores([]string{limited, dir})(); got != min(0.5, procs) {
		t.Errorf("a 0.5-core cgroup: %v cores, want 0.5", got)
	}
	if got := selfCores([]string{loose})(); got != procs {
		t.Errorf("a 64-core limit: %v cores, want GOMAXPROCS %v", got, procs)
	}
	if got := selfCores(nil)(); got != procs {
		t.Errorf("no cgroup: %v cores, want GOMAXPROCS %v", got, procs)
	}
	// The limit is read at every sample: a change is followed.
	if err := os.WriteFile(filepath.Join(limited, "cpu.max"), []byte("25000 100000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := selfCores([]string{limited})(); got != min(0.25, procs) {
		t.Errorf("after the limit changed to 0.25: %v cores", got)
	}
}

func TestNewCPUMeterUsesOptionsCPUs(t *testing.T) {
	t.Parallel()
	if got := newCPUMeter(time.Now(), 1.5).cores(); got != 1.5 {
		t.Errorf("CPUs 1.5: meter uses %v cores", got)
	}
	if got := newCPUMeter(time.Now(), 0).cores(); !(got > 0) {
		t.Errorf("default: meter uses %v cores", got)
	}
}
