package httpagent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/cgroupcpu"
)

// CPUSource reads a replica's cumulative CPU time.
type CPUSource interface {
	// Usage is the CPU time the replica has used so far. It may step
	// back (a process exits); the agent counts a step back as no use.
	Usage() (time.Duration, error)
	// String names the source in logs.
	String() string
}

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux ABI (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// ProcCPU is the CPU time of processes and all their live descendants
// (NGINX's workers are children of its master), read from /proc. A root
// process's reaped children count too (cutime, cstime), so a worker that
// exits does not take its CPU time away. With the real /proc (Proc
// empty) a live process's time is read from its CPU clock, to the
// nanosecond; /proc/<pid>/stat counts in ticks of 10 ms, which over a
// report window of 250 ms on half a core is ±8% of the replica's CPU.
type ProcCPU struct {
	// Pids are the root processes.
	Pids []int
	// Proc is the proc file system's mount point; default /proc.
	Proc string
}

func (p ProcCPU) procDir() string {
	if p.Proc == "" {
		return "/proc"
	}
	return p.Proc
}

func (p ProcCPU) String() string { return fmt.Sprintf("processes %v and their children", p.Pids) }

// procStat is what the agent reads of /proc/<pid>/stat.
type procStat struct {
	ppid                 int
	utime, stime, cu, cs int64
}

func readProcStat(dir string, pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after the last ')' start at field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 15", pid, len(f))
	}
	var st procStat
	// f[0] is field 3; ppid is field 4, utime..cstime fields 14..17.
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: ppid %q", pid, f[1])
	}
	for i, dst := range []*int64{&st.utime, &st.stime, &st.cu, &st.cs} {
		if *dst, err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return procStat{}, fmt.Errorf("/proc/%d/stat: field %d %q", pid, 14+i, f[11+i])
		}
	}
	return st, nil
}

// Usage sums the CPU time of the root processes (their reaped children
// included) and of every live descendant. It fails when no root process
// is alive.
func (p ProcCPU) Usage() (time.Duration, error) {
	dir := p.procDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	stats := make(map[int]procStat, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readProcStat(dir, pid); err == nil {
			stats[pid] = st
		}
	}
	children := make(map[int][]int, len(stats))
	for pid, st := range stats {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var ticks int64
	var clocked time.Duration
	alive := 0
	seen := map[int]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		st := stats[pid]
		if d, ok := p.clock(pid); ok {
			clocked += d
		} else {
			ticks += st.utime + st.stime
		}
		for _, c := range children[pid] {
			walk(c)
		}
	}
	for _, pid := range p.Pids {
		st, ok := stats[pid]
		if !ok {
			continue
		}
		alive++
		ticks += st.cu + st.cs
		walk(pid)
	}
	if alive == 0 {
		return 0, fmt.Errorf("none of the processes %v is running", p.Pids)
	}
	return time.Duration(ticks)*(time.Second/userHZ) + clocked, nil
}

// clock reads a live process's CPU clock when the proc file system is
// the real one (a test's fake /proc names processes that are not there).
func (p ProcCPU) clock(pid int) (time.Duration, bool) {
	if p.Proc != "" {
		return 0, false
	}
	return processClock(pid)
}

// CgroupCPU is the CPU time of every process in a cgroup: cpuacct.usage
// (cgroup v1, nanoseconds) or the usage_usec line of cpu.stat (v2).
type CgroupCPU struct {
	// File is the cpuacct.usage or cpu.stat file.
	File string
}

func (c CgroupCPU) String() string { return "cgroup " + filepath.Dir(c.File) }

// Usage reads the cgroup's CPU time.
func (c CgroupCPU) Usage() (time.Duration, error) { return cgroupcpu.UsageFile(c.File) }

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// ResolveCgroup finds the CPU accounting of a cgroup and the cores it may
// use. name is either a path below the cgroup mount ("fulcrum/r1"), looked
// up in the v1 cpuacct (and cpu,cpuacct) hierarchy and then in the v2
// unified one, or an absolute directory. cores is the cgroup's CPU quota
// (cpu.cfs_quota_us / cpu.cfs_period_us in v1, cpu.max in v2) and, where
// it has none, the machine's cores.
func ResolveCgroup(root, name string) (src CgroupCPU, cores float64, err error) {
	if root == "" {
		root = cgroupRoot
	}
	if name == "" {
		return src, 0, errors.New("cgroup: empty name")
	}
	var acctDirs, cpuDirs []string
	if filepath.IsAbs(name) {
		acctDirs, cpuDirs = []string{name}, []string{name}
		// A v1 cpuacct directory has its quota in the cpu hierarchy.
		if rel, err := filepath.Rel(filepath.Join(root, "cpuacct"), name); err == nil && !strings.HasPrefix(rel, "..") {
			cpuDirs = append(cpuDirs, filepath.Join(root, "cpu", rel))
		}
	} else {
		rel := filepath.Clean(name)
		if strings.HasPrefix(rel, "..") {
			return src, 0, fmt.Errorf("cgroup %q: must not leave the cgroup mount", name)
		}
		for _, h := range []string{"cpuacct", "cpu,cpuacct", ""} {
			acctDirs = append(acctDirs, filepath.Join(root, h, rel))
		}
		for _, h := range []string{"cpu", "cpu,cpuacct", ""} {
			cpuDirs = append(cpuDirs, filepath.Join(root, h, rel))
		}
	}
	for _, d := range acctDirs {
		for _, f := range []string{"cpuacct.usage", "cpu.stat"} {
			p := filepath.Join(d, f)
			if _, err := os.Stat(p); err == nil {
				src = CgroupCPU{File: p}
				break
			}
		}
		if src.File != "" {
			break
		}
	}
	if src.File == "" {
		return src, 0, fmt.Errorf("cgroup %q: no cpuacct.usage or cpu.stat in %s", name, strings.Join(acctDirs, ", "))
	}
	if _, err := src.Usage(); err != nil {
		return src, 0, fmt.Errorf("cgroup %q: %w", name, err)
	}
	cores = float64(runtime.NumCPU())
	for _, d := range cpuDirs {
		if q, ok := cgroupcpu.Quota(d); ok {
			cores = min(cores, q)
			break
		}
	}
	return src, cores, nil
}
