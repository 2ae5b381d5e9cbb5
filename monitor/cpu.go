package monitor

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/cgroupcpu"
)

// cpuMeter turns the process's cumulative CPU time into its share of the
// cores it may use over each report window, and the CPU time of the pool
// it shares those cores with (its cgroup, or the host) into the share that
// other work took. Not safe for concurrent use; the monitor calls it under
// its report lock.
type cpuMeter struct {
	read func() (time.Duration, bool)
	// cores returns the cores the process may use now.
	cores func() float64
	// pool returns the CPU time used so far by everything that shares the
	// process's cores (the process included) and the pool's capacity in
	// cores; false when it cannot be read. Nil: no pool known.
	pool     func() (time.Duration, float64, bool)
	lastCPU  time.Duration
	lastWall time.Time
	ok       bool
	lastPool time.Duration
	poolOK   bool
}

// newCPUMeter returns a meter against cpus cores, or when cpus is 0 against
// the process's cgroup limit or GOMAXPROCS (see Options.CPUs).
func newCPUMeter(now time.Time, cpus float64) *cpuMeter {
	self := cgroupcpu.FindSelf()
	m := &cpuMeter{read: processCPU, cores: func() float64 { return cpus }, pool: selfPool(self, "/proc/stat")}
	if cpus <= 0 {
		m.cores = selfCores(self.CPU)
	}
	m.lastCPU, m.ok = m.read()
	m.lastPool, _, m.poolOK = m.readPool()
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

// selfPool returns the pool of CPU the process competes in: the cgroup
// whose quota binds it (its usage counts every process under that quota),
// else, where the cgroup hierarchy is visible and sets no quota, the whole
// host (procStat, /proc/stat). Where no cgroup hierarchy is visible the
// process may be limited without knowing it, and another process's work
// may not touch its quota at all (a replica in a network namespace beside
// others on one machine), so there is no pool: nil.
func selfPool(self cgroupcpu.Self, procStat string) func() (time.Duration, float64, bool) {
	if len(self.CPU) == 0 {
		return nil
	}
	return func() (time.Duration, float64, bool) {
		if q, acct, ok := self.Limit(); ok {
			if acct == "" {
				return 0, 0, false
			}
			u, err := cgroupcpu.Usage(acct)
			return u, q, err == nil
		}
		return hostCPU(procStat)
	}
}

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux ABI.
const userHZ = 100

// hostCPU returns the CPU time the host's cores have been busy (user, nice,
// system, irq, softirq and steal of /proc/stat's cpu line: everything but
// idle and iowait) and how many cores it counts.
func hostCPU(procStat string) (time.Duration, float64, bool) {
	f, err := os.Open(procStat)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var busy int64
	cores, total := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu") {
			continue
		}
		if fields[0] != "cpu" {
			cores++
			continue
		}
		// cpu user nice system idle iowait irq softirq steal ...
		if len(fields) < 9 {
			return 0, 0, false
		}
		for _, i := range []int{1, 2, 3, 6, 7, 8} {
			v, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil || v < 0 {
				return 0, 0, false
			}
			busy += v
		}
		total = true
	}
	if !total || cores == 0 || busy > (1<<62)/int64(time.Second/userHZ) {
		return 0, 0, false
	}
	return time.Duration(busy) * (time.Second / userHZ), float64(cores), true
}

func (m *cpuMeter) readPool() (time.Duration, float64, bool) {
	if m.pool == nil {
		return 0, 0, false
	}
	return m.pool()
}

// cpuSample is one window's CPU shares.
type cpuSample struct {
	// share is the process's CPU time over the window's length times its
	// cores, in [0, 1]; ok false where the platform offers no process CPU
	// time.
	share float64
	ok    bool
	// other is the share of the process's cores that other work in its
	// pool took, in [0, 1]; otherOK false where no pool is known.
	other   float64
	otherOK bool
}

// sample returns the shares since the previous sample.
//
// Other work is the pool's CPU time less the process's. It competes for
// the process's cores only beyond what the pool has to spare: a pool of
// P cores of which the process may use C leaves P − C to others, so
// other = (pool − own − (P − C)·wall) / (C·wall), clamped to [0, 1]. In a
// cgroup whose quota binds the process, P = C, and other work is simply
// everything else in the cgroup.
func (m *cpuMeter) sample(now time.Time) cpuSample {
	cpu, ok := m.read()
	pool, poolCores, poolOK := m.readPool()
	wall := now.Sub(m.lastWall)
	used := cpu - m.lastCPU
	poolUsed := pool - m.lastPool
	prevOK, prevPoolOK := m.ok, m.poolOK
	m.lastCPU, m.ok, m.lastPool, m.poolOK, m.lastWall = cpu, ok, pool, poolOK, now
	if !ok || !prevOK {
		return cpuSample{}
	}
	cores := m.cores()
	if wall <= 0 || !(cores > 0) {
		return cpuSample{ok: true}
	}
	span := wall.Seconds() * cores
	s := cpuSample{share: min(max(used.Seconds()/span, 0), 1), ok: true}
	if poolOK && prevPoolOK && poolCores > 0 {
		spare := max(poolCores-cores, 0) * wall.Seconds()
		other := (poolUsed - used).Seconds() - spare
		s.other, s.otherOK = min(max(other/span, 0), 1), true
	}
	return s
}
