package monitor

import (
	"runtime"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/cgroupcpu"
)

// cpuMeter turns the process's cumulative CPU time into its share of the
// cores it may use over each report window. Not safe for concurrent use;
// the monitor calls it under its report lock.
type cpuMeter struct {
	read func() (time.Duration, bool)
	// cores returns the cores the process may use now.
	cores    func() float64
	lastCPU  time.Duration
	lastWall time.Time
	ok       bool
}

// newCPUMeter returns a meter against cpus cores, or when cpus is 0 against
// the process's cgroup limit or GOMAXPROCS (see Options.CPUs).
func newCPUMeter(now time.Time, cpus float64) *cpuMeter {
	m := &cpuMeter{read: processCPU, cores: func() float64 { return cpus }}
	if cpus <= 0 {
		m.cores = selfCores(cgroupcpu.SelfDirs())
	}
	m.lastCPU, m.ok = m.read()
	m.lastWall = now
	return m
}

// selfCores returns the cores a process in the cgroup dirs (innermost
// first) may use: the lowest quota on the path where that is below
// GOMAXPROCS, else GOMAXPROCS. The quota files are read at every call, so
// a limit changed at run time is followed; GOMAXPROCS too.
func selfCores(dirs []string) func() float64 {
	return func() float64 {
		procs := float64(runtime.GOMAXPROCS(0))
		if q, ok := cgroupcpu.Limit(dirs); ok && q < procs {
			return q
		}
		return procs
	}
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
	cores := m.cores()
	if wall <= 0 || !(cores > 0) {
		return 0, true
	}
	share := used.Seconds() / (wall.Seconds() * cores)
	return min(max(share, 0), 1), true
}
