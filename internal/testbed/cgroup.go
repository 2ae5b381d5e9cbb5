package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/cgroupcpu"
)

// cgroupParent is the directory, under the cpu controller's hierarchy,
// that holds every testbed's cgroups. It is shared by all testbeds on
// the machine and never removed (removing it could race with another
// process creating its replicas' cgroups).
const cgroupParent = "fulcrum-testbed"

// cgroupFS is where the cpu controller is mounted: cgroup v1
// (cpu.cfs_quota_us, cpu.cfs_period_us; usage from the cpuacct
// hierarchy, which may be the same mount) or v2 (cpu.max, cpu.stat).
type cgroupFS struct {
	v2 bool
	// cpu is the mount point of the hierarchy with the cpu controller.
	cpu string
	// acct is the mount point of the v1 cpuacct hierarchy ("" when it is
	// not mounted; usage is then unknown). Equal to cpu when they share
	// a mount, and unused on v2.
	acct string
}

// detectCgroup finds the cpu controller in /proc/self/mounts: a v1
// hierarchy with "cpu" among its options, else a v2 mount whose
// cgroup.controllers lists "cpu".
func detectCgroup() (cgroupFS, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return cgroupFS{}, fmt.Errorf("testbed: reading mounts: %w", err)
	}
	defer f.Close()
	var v1cpu, v1acct, v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		dir, typ := fields[1], fields[2]
		switch typ {
		case "cgroup":
			for _, o := range strings.Split(fields[3], ",") {
				switch o {
				case "cpu":
					if v1cpu == "" {
						v1cpu = dir
					}
				case "cpuacct":
					if v1acct == "" {
						v1acct = dir
					}
				}
			}
		case "cgroup2":
			if b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); err == nil && v2 == "" {
				if hasWord(string(b), "cpu") {
					v2 = dir
				}
			}
		}
	}
	switch {
	case v1cpu != "":
		return cgroupFS{cpu: v1cpu, acct: v1acct}, nil
	case v2 != "":
		return cgroupFS{v2: true, cpu: v2}, nil
	}
	return cgroupFS{}, errors.New("testbed: no cgroup cpu controller is mounted (neither a v1 \"cpu\" hierarchy nor cgroup2 with \"cpu\" in cgroup.controllers)")
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// cgroup is one replica's cgroup (a directory in the cpu hierarchy and,
// on v1 with a separate cpuacct mount, one there too).
type cgroup struct {
	fs   cgroupFS
	name string
}

func (c cgroup) cpuDir() string { return filepath.Join(c.fs.cpu, cgroupParent, c.name) }

func (c cgroup) acctDir() string {
	if c.fs.v2 || c.fs.acct == "" || c.fs.acct == c.fs.cpu {
		return ""
	}
	return filepath.Join(c.fs.acct, cgroupParent, c.name)
}

// dirs are the cgroup's directories (one, or two on v1 with a separate
// cpuacct hierarchy).
func (c cgroup) dirs() []string {
	if d := c.acctDir(); d != "" {
		return []string{c.cpuDir(), d}
	}
	return []string{c.cpuDir()}
}

// procsFiles are the files a process's pid is written to, to join the
// cgroup.
func (c cgroup) procsFiles() []string {
	var fs []string
	for _, d := range c.dirs() {
		fs = append(fs, filepath.Join(d, "cgroup.procs"))
	}
	return fs
}

// ensureParent creates the shared parent directories and, on v2,
// enables the cpu controller for their children.
func (fs cgroupFS) ensureParent() error {
	roots := []string{fs.cpu}
	if !fs.v2 && fs.acct != "" && fs.acct != fs.cpu {
		roots = append(roots, fs.acct)
	}
	for _, root := range roots {
		if fs.v2 {
			if err := enableCPU(root); err != nil {
				return err
			}
		}
		dir := filepath.Join(root, cgroupParent)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("testbed: creating cgroup %s: %w", dir, err)
		}
		if fs.v2 {
			if err := enableCPU(dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// enableCPU adds the cpu controller to a v2 cgroup's
// cgroup.subtree_control unless it is there.
func enableCPU(dir string) error {
	file := filepath.Join(dir, "cgroup.subtree_control")
	b, err := os.ReadFile(file)
	if err == nil && hasWord(string(b), "cpu") {
		return nil
	}
	if err := os.WriteFile(file, []byte("+cpu"), 0); err != nil {
		return fmt.Errorf("testbed: enabling the cpu controller in %s: %w", file, err)
	}
	return nil
}

// Replica cgroups weigh ten times a normal process in the CPU
// scheduler (cgroup v1 cpu.shares, v2 cpu.weight), so that a busy machine
// still gives a replica its quota: the quota caps it, the weight lets it
// reach the cap ahead of the root cgroup's processes. With the quotas'
// sum below the machine's cores, those keep the rest.
const (
	replicaShares = 10 * 1024 // v1, default 1024
	replicaWeight = 10 * 100  // v2, default 100
)

// create makes the cgroup with a CPU quota of quota per period.
func (c cgroup) create(quota, period time.Duration) error {
	if err := c.fs.ensureParent(); err != nil {
		return err
	}
	for _, d := range c.dirs() {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("testbed: creating cgroup %s: %w", d, err)
		}
	}
	q, p := quota.Microseconds(), period.Microseconds()
	if c.fs.v2 {
		if err := writeFile(filepath.Join(c.cpuDir(), "cpu.weight"), strconv.Itoa(replicaWeight)); err != nil {
			return err
		}
		return writeFile(filepath.Join(c.cpuDir(), "cpu.max"), fmt.Sprintf("%d %d", q, p))
	}
	if err := writeFile(filepath.Join(c.cpuDir(), "cpu.shares"), strconv.Itoa(replicaShares)); err != nil {
		return err
	}
	// The period first: the quota is checked against it.
	if err := writeFile(filepath.Join(c.cpuDir(), "cpu.cfs_period_us"), strconv.FormatInt(p, 10)); err != nil {
		return err
	}
	return writeFile(filepath.Join(c.cpuDir(), "cpu.cfs_quota_us"), strconv.FormatInt(q, 10))
}

func writeFile(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0); err != nil {
		return fmt.Errorf("testbed: writing %q to %s: %w", value, path, err)
	}
	return nil
}

// usageDir is the cgroup's directory that accounts its CPU time: the
// cpuacct hierarchy's on cgroup v1 (cpuacct.usage), the one directory on
// v2 (cpu.stat); "" on a v1 machine without cpuacct.
func (c cgroup) usageDir() string {
	switch {
	case c.fs.v2:
		return c.cpuDir()
	case c.fs.acct == "":
		return ""
	}
	return filepath.Join(c.fs.acct, cgroupParent, c.name)
}

// usage is the CPU time the cgroup's processes have used since it was
// made.
func (c cgroup) usage() (time.Duration, error) {
	dir := c.usageDir()
	if dir == "" {
		return 0, errors.New("testbed: cpu usage: the cgroup v1 cpuacct controller is not mounted")
	}
	u, err := cgroupcpu.Usage(dir)
	if err != nil {
		return 0, fmt.Errorf("testbed: cpu usage: %w", err)
	}
	return u, nil
}

// throttled is how often the cgroup's quota ran out (periods in which
// it was throttled) and for how long in all.
func (c cgroup) throttled() (periods int64, total time.Duration, err error) {
	b, err := os.ReadFile(filepath.Join(c.cpuDir(), "cpu.stat"))
	if err != nil {
		return 0, 0, fmt.Errorf("testbed: cpu.stat: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if perr != nil {
			continue
		}
		switch k {
		case "nr_throttled":
			periods = n
		case "throttled_time": // v1, ns
			total = time.Duration(n)
		case "throttled_usec": // v2
			total = time.Duration(n) * time.Microsecond
		}
	}
	return periods, total, nil
}

// pids lists the processes in the cgroup (any of its directories).
func (c cgroup) pids() []int {
	var pids []int
	seen := map[int]bool{}
	for _, f := range c.procsFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// remove kills the cgroup's processes and removes its directories,
// waiting (up to a bound) for the processes to go. A cgroup that does
// not exist is not an error.
func (c cgroup) remove() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := c.pids()
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var errs []error
		for _, d := range c.dirs() {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("testbed: removing cgroup %s: %w", d, err))
			}
		}
		if len(errs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		time.Sleep(20 * time.Millisecond) // polling the kernel's removal of killed tasks
	}
}

// cgroupNames lists the cgroups under the shared parent (in every
// hierarchy the testbed uses).
func (fs cgroupFS) names() []string {
	seen := map[string]bool{}
	var names []string
	roots := []string{fs.cpu}
	if !fs.v2 && fs.acct != "" && fs.acct != fs.cpu {
		roots = append(roots, fs.acct)
	}
	for _, root := range roots {
		ents, err := os.ReadDir(filepath.Join(root, cgroupParent))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] {
				seen[e.Name()] = true
				names = append(names, e.Name())
			}
		}
	}
	return names
}
