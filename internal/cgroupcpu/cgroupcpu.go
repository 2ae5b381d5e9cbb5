// Package cgroupcpu reads Linux cgroup CPU limits: a cgroup directory's
// quota in cores (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max), and
// where the calling process's own cgroup and its ancestors are, so that a
// process can find the CPU it may use. It reads files only; on other
// systems, or where the cgroup file system is not mounted (inside
// "ip netns exec", for one), it finds nothing.
package cgroupcpu

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
func SelfDirs() []string {
	cg, err1 := os.ReadFile("/proc/self/cgroup")
	mi, err2 := os.ReadFile("/proc/self/mountinfo")
	if err1 != nil || err2 != nil {
		return nil
	}
	return selfDirs(cg, mi)
}

// mount is a cgroup file system in mountinfo: where the part of the
// hierarchy at root is mounted.
type mount struct {
	root, point string
}

func selfDirs(cgroup, mountinfo []byte) []string {
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
		case slices.Contains(strings.Split(f[1], ","), "cpu"):
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
			if v1Mount == nil && slices.Contains(strings.Split(qf[2], ","), "cpu") {
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
