package monitor

import (
	"runtime"
	"time"
)

// cpuMeter turns the process's cumulative CPU time into its share of the
// cores it may use (GOMAXPROCS, which follows the cgroup CPU limit) over each
// report window. Not safe for concurrent use; the monitor calls it under
// its report lock.
type cpuMeter struct {
	read     func() (time.Duration, bool)
	lastCPU  time.Duration
	lastWall time.Time
	ok       bool
}

func newCPUMeter(now time.Time) *cpuMeter {
	m := &cpuMeter{read: processCPU}
	m.lastCPU, m.ok = m.read()
	m.lastWall = now
	return m
}

// sample returns the CPU share in [0, 1] since the previous sample, and
// false where the platform offers no process CPU time.
func (m *cpuMeter) sample(now time.Time) (float64, bool) {
	cpu, ok := m.read()
	if !ok || !m.ok {
		m.lastCPU, m.ok, m.lastWall = cpu, ok, now
		return 0, false
	}
	wall := now.Sub(m.lastWall)
	used := cpu - m.lastCPU
	m.lastCPU, m.lastWall = cpu, now
	if wall <= 0 {
		return 0, true
	}
	share := used.Seconds() / (wall.Seconds() * float64(runtime.GOMAXPROCS(0)))
	return min(max(share, 0), 1), true
}
