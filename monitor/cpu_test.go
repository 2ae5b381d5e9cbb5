package monitor

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/cgroupcpu"
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
		if got := m.sample(start); !got.ok || got.share != tc.want || got.otherOK {
			t.Errorf("%v of CPU in 100 ms on 0.25 cores: %+v; want share %v and no other work known", tc.cpu, got, tc.want)
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

// Other work is the pool's CPU time less the process's own, as a share of
// the process's cores, after what the pool has to spare beyond them.
func TestCPUMeterOtherWork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		cores, poolCores float64
		own, pool        time.Duration // used over the next 100 ms
		want             float64
	}{
		{"quota: the rest of the cgroup", 0.5, 0.5, 20 * time.Millisecond, 45 * time.Millisecond, 0.5},
		{"quota: alone", 0.5, 0.5, 30 * time.Millisecond, 30 * time.Millisecond, 0},
		{"host: others on the spare cores do not count", 2, 4, 50 * time.Millisecond, 250 * time.Millisecond, 0},
		{"host: others beyond the spare cores do", 2, 4, 50 * time.Millisecond, 350 * time.Millisecond, 0.5},
		{"host: every core busy with others", 2, 2, 0, 200 * time.Millisecond, 1},
		{"accounting skew: the pool below the process", 1, 1, 50 * time.Millisecond, 40 * time.Millisecond, 0},
	} {
		var own, pool time.Duration
		start := time.Unix(1000, 0)
		m := &cpuMeter{
			read:  func() (time.Duration, bool) { return own, true },
			cores: func() float64 { return tc.cores },
			pool:  func() (time.Duration, float64, bool) { return pool, tc.poolCores, true },
			ok:    true, poolOK: true, lastWall: start,
		}
		own, pool = tc.own, tc.pool
		got := m.sample(start.Add(100 * time.Millisecond))
		if !got.otherOK || math.Abs(got.other-tc.want) > 1e-9 {
			t.Errorf("%s: %+v, want other %v", tc.name, got, tc.want)
		}
	}
}

// A pool that fails to read (or read for the first time) gives no other
// work for that window, not a spike: the next window has a baseline.
func TestCPUMeterOtherWorkNeedsTwoReadings(t *testing.T) {
	t.Parallel()
	var pool time.Duration
	readable := false
	start := time.Unix(1000, 0)
	m := &cpuMeter{
		read:     func() (time.Duration, bool) { return 0, true },
		cores:    func() float64 { return 1 },
		pool:     func() (time.Duration, float64, bool) { return pool, 1, readable },
		ok:       true,
		lastWall: start,
	}
	pool = time.Hour
	if got := m.sample(start.Add(100 * time.Millisecond)); got.otherOK {
		t.Errorf("unreadable pool: %+v", got)
	}
	readable = true
	if got := m.sample(start.Add(200 * time.Millisecond)); got.otherOK {
		t.Errorf("first reading: %+v, want no other work yet", got)
	}
	pool += 25 * time.Millisecond
	if got := m.sample(start.Add(300 * time.Millisecond)); !got.otherOK || got.other != 0.25 {
		t.Errorf("second reading: %+v, want other 0.25", got)
	}
}

func TestHostCPU(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good", "cpu  100 5 30 1000 50 3 2 10 0 0\ncpu0 50 2 15 500 25 1 1 5 0 0\ncpu1 50 3 15 500 25 2 1 5 0 0\nintr 1 2 3\n")
	busy, cores, ok := hostCPU(good)
	// user+nice+system+irq+softirq+steal = 100+5+30+3+2+10 ticks of 10 ms.
	if !ok || busy != 1500*time.Millisecond || cores != 2 {
		t.Errorf("hostCPU = %v, %v, %v; want 1.5s, 2, true", busy, cores, ok)
	}
	for name, content := range map[string]string{
		"short":   "cpu 1 2 3\ncpu0 1 2 3\n",
		"garbage": "cpu a b c d e f g h\ncpu0 1\n",
		"no-cpus": "cpu  100 5 30 1000 50 3 2 10 0 0\n",
		"empty":   "",
	} {
		if _, _, ok := hostCPU(file(name, content)); ok {
			t.Errorf("hostCPU(%s) succeeded", name)
		}
	}
	if _, _, ok := hostCPU(filepath.Join(dir, "missing")); ok {
		t.Error("hostCPU of a missing file succeeded")
	}
}

// The pool is the cgroup whose quota binds; without one, the host; with
// no cgroup hierarchy visible, none.
func TestSelfPool(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(p, content string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cg := filepath.Join(root, "cg")
	write(filepath.Join(cg, "r1", "cpu.max"), "25000 100000\n")
	write(filepath.Join(cg, "r1", "cpu.stat"), "usage_usec 700000\n")
	write(filepath.Join(cg, "cpu.max"), "max 100000\n")
	stat := filepath.Join(root, "stat")
	write(stat, "cpu  100 0 0 0 0 0 0 0\ncpu0 100 0 0 0 0 0 0 0\n")
	dirs := []string{filepath.Join(cg, "r1"), cg}

	u, cores, ok := selfPool(cgroupcpu.Self{CPU: dirs, Acct: dirs}, stat)()
	if !ok || u != 700*time.Millisecond || cores != 0.25 {
		t.Errorf("limited cgroup: %v, %v, %v; want 0.7s, 0.25, true", u, cores, ok)
	}
	u, cores, ok = selfPool(cgroupcpu.Self{CPU: dirs[1:], Acct: dirs[1:]}, stat)()
	if !ok || u != time.Second || cores != 1 {
		t.Errorf("no quota: %v, %v, %v; want the host's 1s, 1, true", u, cores, ok)
	}
	if p := selfPool(cgroupcpu.Self{}, stat); p != nil {
		t.Error("no cgroup visible: a pool was chosen")
	}
}
