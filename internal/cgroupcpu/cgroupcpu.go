// Package cgroupcpu reads Linux cgroup CPU limits and accounting: a cgroup
// directory's quota in cores (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2
// cpu.max) and the CPU time its processes have used (v1 cpuacct.usage, v2
// cpu.stat usage_usec), and where the calling process's own cgroup and its
// ancestors are, so that a process can find the CPU it may use and who
// else uses it. It reads files only; on other systems, or where the cgroup
// file system is not mounted (inside "ip netns exec", for one), it finds
// nothing.
package cgroupcpu

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Quota returns the cores a cgroup directory's CPU quota allows, and false
// when the directory has no quota file or no limit.
func Quota(dir string) (float64, bool) {
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			q, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil && q > 0 && p > 0 {
				return q / p, true
			}
		}
		return 0, false
	}
	qb, err1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	pb, err2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	q, err1 := strconv.ParseFloat(strings.TrimSpace(string(qb)), 64)
	p, err2 := strconv.ParseFloat(strings.TrimSpace(string(pb)), 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return q / p, true
}

// Limit returns the lowest quota among dirs (a cgroup and its ancestors:
// a limit anywhere on the path binds), and false when none has one.
func Limit(dirs []string) (float64, bool) {
	limit, found := 0.0, false
	for _, d := range dirs {
		if q, ok := Quota(d); ok && (!found || q < limit) {
			limit, found = q, true
		}
	}
	return limit, found
}

// SelfDirs returns the directories of the calling process's CPU cgroup and
// of its ancestors up to the mount point, innermost first: from
// /proc/self/cgroup and /proc/self/mountinfo. It prefers the v1 cpu
// controller's hierarchy and falls back to the v2 unified one. Empty when
// neither is visible.
func SelfDirs() []string { return FindSelf().CPU }

// Self is where the calling process's CPU cgroups are: the directories of
// its cgroup and of their ancestors up to the mount point, innermost
// first, in the hierarchy that sets quotas (CPU: v1 cpu, else v2) and in
// the one that accounts usage (Acct: v1 cpuacct, else v2). On v2, and on
// v1 with cpu and cpuacct mounted together, the two are the same.
type Self struct {
	CPU, Acct []string
}

// FindSelf reads /proc/self/cgroup and /proc/self/mountinfo. Its lists are
// empty where the hierarchies are not visible.
func FindSelf() Self {
	cg, err1 := os.ReadFile("/proc/self/cgroup")
	mi, err2 := os.ReadFile("/proc/self/mountinfo")
	if err1 != nil || err2 != nil {
		return Self{}
	}
	return Self{CPU: selfDirs(cg, mi, "cpu"), Acct: selfDirs(cg, mi, "cpuacct")}
}

// Limit returns the lowest quota on the process's path (the one that
// binds) and the accounting directory of the cgroup that sets it, whose
// usage is therefore all the work sharing that quota. acct is "" when the
// accounting hierarchy has no cgroup at the same place. ok is false when
// no cgroup on the path has a quota. The quota files are read at every
// call.
func (s Self) Limit() (cores float64, acct string, ok bool) {
	at := -1
	for i, d := range s.CPU {
		if q, found := Quota(d); found && (at < 0 || q < cores) {
			cores, at = q, i
		}
	}
	if at < 0 {
		return 0, "", false
	}
	// The same cgroup in the accounting hierarchy: as far below its mount
	// point as the quota's directory is below the cpu hierarchy's.
	if n, m := len(s.CPU), len(s.Acct); m > 0 {
		rel, err := filepath.Rel(s.CPU[n-1], s.CPU[at])
		if err == nil {
			want := filepath.Join(s.Acct[m-1], rel)
			if slices.Contains(s.Acct, want) {
				acct = want
			}
		}
	}
	return cores, acct, true
}

// Usage returns the CPU time every process in the cgroup directory dir
// (and its descendants) has used: cpuacct.usage (v1, nanoseconds), else
// the usage_usec line of cpu.stat (v2).
func Usage(dir string) (time.Duration, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage")); err == nil {
		return parseUsage(filepath.Join(dir, "cpuacct.usage"), b)
	}
	f := filepath.Join(dir, "cpu.stat")
	b, err := os.ReadFile(f)
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: no cpuacct.usage or cpu.stat: %w", dir, err)
	}
	return parseUsage(f, b)
}

// UsageFile reads the CPU time from one accounting file, a v1
// cpuacct.usage or a v2 cpu.stat (told apart by its name).
func UsageFile(file string) (time.Duration, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return parseUsage(file, b)
}

func parseUsage(file string, b []byte) (time.Duration, error) {
	if filepath.Base(file) == "cpu.stat" {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil || us < 0 || us > math.MaxInt64/int64(time.Microsecond) {
					return 0, fmt.Errorf("%s: usage_usec %q is not a count of microseconds", file, strings.TrimSpace(v))
				}
				return time.Duration(us) * time.Microsecond, nil
			}
		}
		return 0, fmt.Errorf("%s: no usage_usec line", file)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("%s: %q is not a count of nanoseconds", file, strings.TrimSpace(string(b)))
	}
	return time.Duration(ns), nil
}

// mount is a cgroup file system in mountinfo: where the part of the
// hierarchy at root is mounted.
type mount struct {
	root, point string
}

// selfDirs finds the process's cgroup directories in the v1 hierarchy of
// controller, else in the v2 unified one.
func selfDirs(cgroup, mountinfo []byte, controller string) []string {
	var v1Path, v2Path string
	haveV1, haveV2 := false, false
	for line := range strings.Lines(string(cgroup)) {
		// hierarchy-ID:controller-list:path
		f := strings.SplitN(strings.TrimRight(line, "\n"), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2Path, haveV2 = f[2], true
		case slices.Contains(strings.Split(f[1], ","), controller):
			v1Path, haveV1 = f[2], true
		}
	}
	var v1Mount, v2Mount *mount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		m := &mount{root: unescape(pf[3]), point: filepath.Clean(unescape(pf[4]))}
		if !filepath.IsAbs(m.point) || !filepath.IsAbs(m.root) {
			continue
		}
		switch qf[0] {
		case "cgroup":
			if v1Mount == nil && slices.Contains(strings.Split(qf[2], ","), controller) {
				v1Mount = m
			}
		case "cgroup2":
			if v2Mount == nil {
				v2Mount = m
			}
		}
	}
	switch {
	case haveV1 && v1Mount != nil:
		return ancestors(v1Mount, v1Path)
	case haveV2 && v2Mount != nil:
		return ancestors(v2Mount, v2Path)
	}
	return nil
}

// ancestors maps the cgroup path p to its directory under m and lists it
// with its ancestors up to m's mount point. Nil when p is not below the
// part of the hierarchy m mounts.
func ancestors(m *mount, p string) []string {
	rel, err := filepath.Rel(m.root, filepath.Clean("/"+p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	dir := filepath.Join(m.point, rel)
	dirs := []string{dir}
	for dir != m.point {
		dir = filepath.Dir(dir)
		dirs = append(dirs, dir)
	}
	return dirs
}

// unescape undoes mountinfo's octal escapes (\040 for a space and the like).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
